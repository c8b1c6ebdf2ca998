import { useState } from 'react';
import { Button } from '../../../components/ui/button';

interface KeyRevealProps {
  name: string;
  apiKey: string;
  /** Set after a rotation: until when the replaced key still works. */
  previousKeyExpiresAt: string | null;
  onDismiss: () => void;
}

/** A new API key, shown this once (only its hash is kept), with a copy button. */
export function KeyReveal({ name, apiKey, previousKeyExpiresAt, onDismiss }: KeyRevealProps) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no');
  return (
    <section className="applications__key" aria-label="New API key">
      <p>
        The API key of <strong>{name}</strong>. Copy it now: it is not shown again.
        {previousKeyExpiresAt ? ` The old key works until ${new Date(previousKeyExpiresAt).toLocaleString()}.` : ''}
      </p>
      <p className="applications__key-row">
        <code data-testid="application-key">{apiKey}</code>
        <Button
          size="small"
          variant="primary"
          aria-label={`Copy the key of ${name}`}
          onClick={() => {
            navigator.clipboard.writeText(apiKey).then(
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
            ? 'The browser refused the clipboard: select the key and copy it.'
            : ''}
      </p>
    </section>
  );
}
