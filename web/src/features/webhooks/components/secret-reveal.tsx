import { ShownOnce } from '../../../components/ui/shown-once';

interface SecretRevealProps {
  url: string;
  secret: string;
  onDismiss: () => void;
}

/** A new signing secret, shown this once (it cannot be read again), with a copy button. */
export function SecretReveal({ url, secret, onDismiss }: SecretRevealProps) {
  return (
    <ShownOnce label="New signing secret" value={secret} noun="secret" testId="webhook-secret" onDismiss={onDismiss}>
      The signing secret of <strong>{url}</strong>. Copy it now: it is not shown again.
    </ShownOnce>
  );
}
