import { useState, type ReactNode } from 'react';
import type { Application } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { RowConfirm } from '../../../components/ui/row-confirm';
import { DEFAULT_GRACE_SECONDS, GRACE_CHOICES } from './application-text';
import type { ApplicationActions } from './use-application-actions';

/** What a row can ask of its operator: a new name, a confirmation, a grace period, a content retention. */
export type RowActionKind = 'rename' | 'revoke' | 'rotate' | 'content';

interface ApplicationRowActionsProps {
  application: Application;
  /** The question or field open on this row, if any. */
  action: RowActionKind | null;
  actions: ApplicationActions;
  onStart: (kind: RowActionKind) => void;
  onCancel: () => void;
}

/** A row's buttons, or the question or field one of them opened. */
export function ApplicationRowActions({ application, action, actions, onStart, onCancel }: ApplicationRowActionsProps) {
  const { rename, revoke, update, rotate } = actions;
  if (action === 'rename')
    return (
      <RenameForm
        application={application}
        isPending={rename.isPending}
        onSave={(name) => rename.mutate({ application, name })}
        onCancel={onCancel}
      />
    );
  if (action === 'revoke')
    return (
      <RowConfirm
        question={`Revoke ${application.name}? Its key stops working at once.`}
        action="Revoke"
        isBusy={revoke.isPending}
        onConfirm={() => revoke.mutate(application)}
        onKeep={onCancel}
      />
    );
  if (action === 'content')
    return (
      <ContentForm
        application={application}
        isPending={update.isPending}
        onSave={(days) => update.mutate({ application, changes: { contentRetentionDays: days } })}
        onCancel={onCancel}
      />
    );
  if (action === 'rotate')
    return (
      <RotateForm
        application={application}
        isPending={rotate.isPending}
        onSave={(graceSeconds) => rotate.mutate({ application, graceSeconds })}
        onCancel={onCancel}
      />
    );
  return (
    <>
      <Button size="small" variant="ghost" aria-label={`Rename ${application.name}`} onClick={() => onStart('rename')}>
        Rename
      </Button>
      {application.revokedAt !== null ? null : (
        <>
          <Button size="small" variant="ghost" aria-label={`Rotate the key of ${application.name}`} onClick={() => onStart('rotate')}>
            Rotate key
          </Button>
          <Button size="small" variant="ghost" aria-label={`Content retention of ${application.name}`} onClick={() => onStart('content')}>
            Content
          </Button>
          <Button size="small" variant="ghost" aria-label={`Revoke ${application.name}`} onClick={() => onStart('revoke')}>
            Revoke
          </Button>
        </>
      )}
    </>
  );
}

interface RowFormProps {
  label: string;
  submitText: string;
  isPending: boolean;
  onSubmit: () => void;
  onCancel: () => void;
  children: ReactNode;
}

/** A field in place of a row's buttons, with its submit and Cancel. */
function RowForm({ label, submitText, isPending, onSubmit, onCancel, children }: RowFormProps) {
  return (
    <form
      className="applications__inline"
      aria-label={label}
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit();
      }}
    >
      {children}
      <Button type="submit" size="small" variant="primary" disabled={isPending}>
        {submitText}
      </Button>
      <Button size="small" variant="ghost" onClick={onCancel}>
        Cancel
      </Button>
    </form>
  );
}

interface RowFieldProps<T> {
  application: Application;
  isPending: boolean;
  onCancel: () => void;
  onSave: (value: T) => void;
}

function RenameForm({ application, isPending, onSave, onCancel }: RowFieldProps<string>) {
  const [name, setName] = useState(application.name);
  return (
    <RowForm
      label={`Rename ${application.name}`}
      submitText="Save"
      isPending={isPending}
      onSubmit={() => onSave(name.trim())}
      onCancel={onCancel}
    >
      <input
        type="text"
        required
        maxLength={64}
        value={name}
        aria-label={`New name for ${application.name}`}
        onChange={(e) => setName(e.target.value)}
        autoFocus
      />
    </RowForm>
  );
}

function ContentForm({ application, isPending, onSave, onCancel }: RowFieldProps<number | null>) {
  const [days, setDays] = useState(application.contentRetentionDays === null ? '' : String(application.contentRetentionDays));
  return (
    <RowForm
      label={`Content retention of ${application.name}`}
      submitText="Save"
      isPending={isPending}
      onSubmit={() => onSave(days.trim() === '' ? null : Number(days))}
      onCancel={onCancel}
    >
      <label className="applications__grace">
        <span>Days its final mails keep their content (empty: the default)</span>
        <input type="number" min={0} step={1} value={days} onChange={(e) => setDays(e.target.value)} autoFocus />
      </label>
    </RowForm>
  );
}

function RotateForm({ application, isPending, onSave, onCancel }: RowFieldProps<number>) {
  const [grace, setGrace] = useState(DEFAULT_GRACE_SECONDS);
  return (
    <RowForm
      label={`Rotate the key of ${application.name}`}
      submitText="Rotate"
      isPending={isPending}
      onSubmit={() => onSave(grace)}
      onCancel={onCancel}
    >
      <label className="applications__grace">
        <span>Old key keeps working for</span>
        <select value={grace} onChange={(e) => setGrace(Number(e.target.value))} autoFocus>
          {GRACE_CHOICES.map((choice) => (
            <option key={choice.seconds} value={choice.seconds}>
              {choice.label}
            </option>
          ))}
        </select>
      </label>
    </RowForm>
  );
}
