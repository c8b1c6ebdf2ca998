import type { FormEvent } from 'react';
import { LANES, type Lane } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { errorText } from '../../../lib/api-client';
import type { ApplicationActions } from './use-application-actions';

/** What the form holds; its owner keeps it, so that a form cancelled and opened again shows what was typed. */
export interface NewApplicationDraft {
  name: string;
  lane: Lane;
}

export const EMPTY_APPLICATION_DRAFT: NewApplicationDraft = { name: '', lane: 'transactional' };

interface NewApplicationFormProps {
  create: ApplicationActions['create'];
  draft: NewApplicationDraft;
  onDraftChange: (draft: NewApplicationDraft) => void;
  onCancel: () => void;
}

/** The Applications panel's form for a new application: its name and lane; the key is shown once it is made. */
export function NewApplicationForm({ create, draft, onDraftChange, onCancel }: NewApplicationFormProps) {
  function submit(event: FormEvent) {
    event.preventDefault();
    create.mutate({ name: draft.name.trim(), lane: draft.lane });
  }

  return (
    <form className="applications__form" onSubmit={submit} aria-label="New application">
      <label className="panel__field">
        <span>Name</span>
        <input
          type="text"
          required
          maxLength={64}
          value={draft.name}
          onChange={(e) => onDraftChange({ ...draft, name: e.target.value })}
          aria-describedby="application-name-hint"
          data-autofocus
        />
      </label>
      <p id="application-name-hint" className="muted applications__hint">
        1 to 64 letters, digits or . _ @ -. The key is shown once, when it is made.
      </p>
      <label className="panel__field">
        <span>Lane</span>
        <select value={draft.lane} onChange={(e) => onDraftChange({ ...draft, lane: e.target.value as Lane })}>
          {LANES.map((choice) => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
      </label>
      {create.isError ? (
        <p role="alert" className="applications__error">
          {errorText(create.error, 'The application could not be created; try again.')}
        </p>
      ) : null}
      <div className="panel__toolbar">
        <Button type="submit" variant="primary" size="small" disabled={create.isPending}>
          Create
        </Button>
        <Button
          size="small"
          variant="ghost"
          onClick={() => {
            create.reset();
            onCancel();
          }}
        >
          Cancel
        </Button>
      </div>
    </form>
  );
}
