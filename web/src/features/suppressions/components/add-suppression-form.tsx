import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { AddSuppressionRequest } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ErrorMessage } from '../../../components/ui/error-message';

interface AddSuppressionFormProps {
  busy: boolean;
  error: string | null;
  onSubmit: (body: AddSuppressionRequest) => void;
  onCancel: () => void;
}

/**
 * A local date and time from `<input type="datetime-local">` (yyyy-mm-ddThh:mm) → the instant it names, as the
 * API's ISO string; '' stays '' (no expiry). The server refuses an instant in the past, naming the field.
 */
export function localToInstant(local: string): string {
  if (local === '') return '';
  const at = new Date(local);
  return Number.isNaN(at.getTime()) ? local : at.toISOString();
}

/** Add an address by hand: the address, an optional note, an optional expiry (left empty: until removed). */
export function AddSuppressionForm({ busy, error, onSubmit, onCancel }: AddSuppressionFormProps) {
  const [address, setAddress] = useState('');
  const [note, setNote] = useState('');
  const [expires, setExpires] = useState('');
  const addressInput = useRef<HTMLInputElement>(null);

  // The form opens inside the already open panel, so the dialog's data-autofocus has run: focus its first field.
  useEffect(() => addressInput.current?.focus(), []);

  function submit(event: FormEvent) {
    event.preventDefault();
    const body: AddSuppressionRequest = { address: address.trim() };
    if (note.trim() !== '') body.note = note.trim();
    if (expires !== '') body.expiresAt = localToInstant(expires);
    onSubmit(body);
  }

  return (
    <form className="suppressions__form" onSubmit={submit} aria-label="Add an address">
      <label className="panel__field suppressions__address">
        <span>Address</span>
        <input
          ref={addressInput}
          type="email"
          required
          maxLength={254}
          value={address}
          onChange={(e) => setAddress(e.target.value)}
          placeholder="someone@example.com"
        />
      </label>
      <label className="panel__field suppressions__note">
        <span>Note (optional)</span>
        <input type="text" maxLength={1000} value={note} onChange={(e) => setNote(e.target.value)} />
      </label>
      <label className="panel__field">
        <span>Expires (optional)</span>
        <input type="datetime-local" value={expires} onChange={(e) => setExpires(e.target.value)} />
      </label>
      <span className="suppressions__form-buttons">
        <Button type="submit" variant="primary" size="small" disabled={busy}>
          Add to the list
        </Button>
        <Button variant="ghost" size="small" onClick={onCancel}>
          Cancel
        </Button>
      </span>
      <ErrorMessage text={error} className="suppressions__form-error" />
    </form>
  );
}
