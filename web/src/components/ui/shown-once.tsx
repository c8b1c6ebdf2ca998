import { useState, type ReactNode } from 'react';
import { Button } from './button';

interface ShownOnceProps {
  /** The region's accessible name, e.g. "New API key". */
  label: string;
  /** What it is and whose, ending with why to copy it now. */
  children: ReactNode;
  value: string;
  /** What the value is called in the clipboard's failure sentence: "key", "secret". */
  noun: string;
  /** The Copy button's accessible name when the region holds more than one thing to copy in a list. */
  copyLabel?: string | undefined;
  testId: string;
  onDismiss: () => void;
}

/**
 * A secret the server shows once and keeps only as a hash (an API key, a webhook signing secret): the value, a Copy
 * button that says whether the clipboard took it, and Done, which hides it for good.
 */
export function ShownOnce({ label, children, value, noun, copyLabel, testId, onDismiss }: ShownOnceProps) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no');
  return (
    <section className="shown-once" aria-label={label}>
      <p>{children}</p>
      <p className="shown-once__row">
        <code data-testid={testId}>{value}</code>
        <Button
          size="small"
          variant="primary"
          aria-label={copyLabel}
          onClick={() => {
            navigator.clipboard.writeText(value).then(
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
            ? `The browser refused the clipboard: select the ${noun} and copy it.`
            : ''}
      </p>
    </section>
  );
}
