import { useState } from 'react';
import { Button } from '../../../components/ui/button';

interface SecretRevealProps {
  url: string;
  secret: string;
  onDismiss: () => void;
}

/** A new signing secret, shown this once (it cannot be read again), with a copy button. */
export function SecretReveal({ url, secret, onDismiss }: SecretRevealProps) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no');
  return (
    <section className="webhooks__secret" aria-label="New signing secret">
      <p>
        The signing secret of <strong>{url}</strong>. Copy it now: it is not shown again.
      </p>
      <p className="webhooks__secret-row">
        <code data-testid="webhook-secret">{secret}</code>
        <Button
          size="small"
          variant="primary"
          onClick={() => {
            navigator.clipboard.writeText(secret).then(
              () => setCopied('yes'),
              () => setCopied('failed'),
            );
          }}
        >
          Copy
        </Button>
        <Button size="small" variant="ghost" onClick={onDismiss}>
          Done
        </Button>
      </p>
      <p role="status" className="muted">
        {copied === 'yes'
          ? 'Copied to the clipboard.'
          : copied === 'failed'
            ? 'The browser refused the clipboard: select the secret and copy it.'
            : ''}
      </p>
    </section>
  );
}
