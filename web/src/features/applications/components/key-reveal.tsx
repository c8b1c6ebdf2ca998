import { ShownOnce } from '../../../components/ui/shown-once';

interface KeyRevealProps {
  name: string;
  apiKey: string;
  /** Set after a rotation: until when the replaced key still works. */
  previousKeyExpiresAt: string | null;
  onDismiss: () => void;
}

/** A new API key, shown this once (only its hash is kept), with a copy button. */
export function KeyReveal({ name, apiKey, previousKeyExpiresAt, onDismiss }: KeyRevealProps) {
  return (
    <ShownOnce
      label="New API key"
      value={apiKey}
      noun="key"
      copyLabel={`Copy the key of ${name}`}
      testId="application-key"
      onDismiss={onDismiss}
    >
      The API key of <strong>{name}</strong>. Copy it now: it is not shown again.
      {previousKeyExpiresAt ? ` The old key works until ${new Date(previousKeyExpiresAt).toLocaleString()}.` : ''}
    </ShownOnce>
  );
}
