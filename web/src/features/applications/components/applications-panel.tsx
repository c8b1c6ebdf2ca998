import './applications.css';
import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { LANES, type Application, type ApplicationWithKey, type Lane } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { LocalTime as Time } from '../../../components/ui/local-time';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { PanelTable, type PanelColumn } from '../../../components/ui/panel-table';
import { RowConfirm } from '../../../components/ui/row-confirm';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { errorText } from '../../../lib/api-client';
import {
  applicationKeys,
  createApplication,
  renameApplication,
  revokeApplication,
  rotateApplicationKey,
  updateApplication,
  useApplications,
} from '../api/applications-api';
import { creatorText, DEFAULT_GRACE_SECONDS, GRACE_CHOICES, mailsText } from './application-text';
import { KeyReveal } from './key-reveal';

/** What a row is asking of its operator, if anything: a new name, a confirmation, a grace period. */
type RowAction = { kind: 'rename' | 'revoke' | 'rotate' | 'content'; id: number } | null;

/** How long an application's final mails keep their content, as the table says it. */
const contentText = (days: number | null) =>
  days === null ? 'Default' : days === 0 ? 'Removed once final' : `${days} ${days === 1 ? 'day' : 'days'}`;

interface ApplicationsPanelProps {
  token: string;
  onClose: () => void;
}

/**
 * The Applications panel (docs/console.md §10.20): every application (API key) with who made it and when, its
 * last use, its mails of the last 24 hours and its state; create (the key shown once), rename, rotate the key
 * with a grace period for the old one, revoke after a confirmation.
 */
export function ApplicationsPanel({ token, onClose }: ApplicationsPanelProps) {
  const queryClient = useQueryClient();
  const applications = useApplications(token);
  const [creating, setCreating] = useState(false);
  const [newName, setNewName] = useState('');
  const [newLane, setNewLane] = useState<Lane>('transactional');
  const [contentDays, setContentDays] = useState('');
  const [rowAction, setRowAction] = useState<RowAction>(null);
  const [rename, setRename] = useState('');
  const [grace, setGrace] = useState(DEFAULT_GRACE_SECONDS);
  const [revealed, setRevealed] = useState<ApplicationWithKey | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const refresh = () => void queryClient.invalidateQueries({ queryKey: applicationKeys.all });
  const failed = (fallback: string) => (error: unknown) => setNotice(errorText(error, fallback));

  const create = useMutation({
    mutationFn: (input: { name: string; lane: Lane }) => createApplication(token, input.name, input.lane),
    onSuccess: (application) => {
      setRevealed(application);
      setCreating(false);
      setNewName('');
      setNewLane('transactional');
      setNotice(`Application ${application.name} created.`);
      refresh();
    },
  });
  const saveName = useMutation({
    mutationFn: (input: { application: Application; name: string }) => renameApplication(token, input.application.id, input.name),
    onSuccess: (application, input) => {
      setRowAction(null);
      setNotice(`${input.application.name} renamed to ${application.name}.`);
      refresh();
    },
    onError: failed('The application could not be renamed; try again.'),
  });
  const revoke = useMutation({
    mutationFn: (application: Application) => revokeApplication(token, application.id),
    onSuccess: (application) => {
      setRowAction(null);
      setNotice(`${application.name} revoked: its key is refused from now on.`);
      refresh();
    },
    onError: failed('The application could not be revoked; try again.'),
  });
  const update = useMutation({
    mutationFn: (input: { application: Application; changes: { lane?: Lane; contentRetentionDays?: number | null } }) =>
      updateApplication(token, input.application.id, input.changes),
    onSuccess: (application, input) => {
      setRowAction(null);
      setNotice(
        input.changes.lane !== undefined
          ? `${application.name} now sends in the ${application.lane} lane.`
          : `${application.name} keeps content: ${contentText(application.contentRetentionDays).toLowerCase()}.`,
      );
      refresh();
    },
    onError: failed('The application could not be changed; try again.'),
  });
  const rotate = useMutation({
    mutationFn: (input: { application: Application; graceSeconds: number }) =>
      rotateApplicationKey(token, input.application.id, input.graceSeconds),
    onSuccess: (application) => {
      setRowAction(null);
      setRevealed(application);
      setNotice(`New key made for ${application.name}.`);
      refresh();
    },
    onError: failed('The key could not be rotated; try again.'),
  });

  function submitCreate(event: FormEvent) {
    event.preventDefault();
    create.mutate({ name: newName.trim(), lane: newLane });
  }

  function start(kind: 'rename' | 'revoke' | 'rotate' | 'content', application: Application) {
    setNotice(null);
    setRename(application.name);
    setContentDays(application.contentRetentionDays === null ? '' : String(application.contentRetentionDays));
    setGrace(DEFAULT_GRACE_SECONDS);
    setRowAction({ kind, id: application.id });
  }

  /** A row's buttons, or the question or field one of them opened. */
  function actionsOf(application: Application) {
    const action = rowAction?.id === application.id ? rowAction.kind : null;
    const isRevoked = application.revokedAt !== null;
    return action === 'rename' ? (
      <form
        className="applications__inline"
        aria-label={`Rename ${application.name}`}
        onSubmit={(event) => {
          event.preventDefault();
          saveName.mutate({ application, name: rename.trim() });
        }}
      >
        <input
          type="text"
          required
          maxLength={64}
          value={rename}
          aria-label={`New name for ${application.name}`}
          onChange={(e) => setRename(e.target.value)}
          autoFocus
        />
        <Button type="submit" size="small" variant="primary" disabled={saveName.isPending}>
          Save
        </Button>
        <Button size="small" variant="ghost" onClick={() => setRowAction(null)}>
          Cancel
        </Button>
      </form>
    ) : action === 'revoke' ? (
      <RowConfirm
        question={`Revoke ${application.name}? Its key stops working at once.`}
        action="Revoke"
        isBusy={revoke.isPending}
        onConfirm={() => revoke.mutate(application)}
        onKeep={() => setRowAction(null)}
      />
    ) : action === 'content' ? (
      <form
        className="applications__inline"
        aria-label={`Content retention of ${application.name}`}
        onSubmit={(event) => {
          event.preventDefault();
          const days = contentDays.trim() === '' ? null : Number(contentDays);
          update.mutate({ application, changes: { contentRetentionDays: days } });
        }}
      >
        <label className="applications__grace">
          <span>Days its final mails keep their content (empty: the default)</span>
          <input type="number" min={0} step={1} value={contentDays} onChange={(e) => setContentDays(e.target.value)} autoFocus />
        </label>
        <Button type="submit" size="small" variant="primary" disabled={update.isPending}>
          Save
        </Button>
        <Button size="small" variant="ghost" onClick={() => setRowAction(null)}>
          Cancel
        </Button>
      </form>
    ) : action === 'rotate' ? (
      <form
        className="applications__inline"
        aria-label={`Rotate the key of ${application.name}`}
        onSubmit={(event) => {
          event.preventDefault();
          rotate.mutate({ application, graceSeconds: grace });
        }}
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
        <Button type="submit" size="small" variant="primary" disabled={rotate.isPending}>
          Rotate
        </Button>
        <Button size="small" variant="ghost" onClick={() => setRowAction(null)}>
          Cancel
        </Button>
      </form>
    ) : (
      <>
        <Button size="small" variant="ghost" aria-label={`Rename ${application.name}`} onClick={() => start('rename', application)}>
          Rename
        </Button>
        {isRevoked ? null : (
          <>
            <Button
              size="small"
              variant="ghost"
              aria-label={`Rotate the key of ${application.name}`}
              onClick={() => start('rotate', application)}
            >
              Rotate key
            </Button>
            <Button
              size="small"
              variant="ghost"
              aria-label={`Content retention of ${application.name}`}
              onClick={() => start('content', application)}
            >
              Content
            </Button>
            <Button size="small" variant="ghost" aria-label={`Revoke ${application.name}`} onClick={() => start('revoke', application)}>
              Revoke
            </Button>
          </>
        )}
      </>
    );
  }

  const columns: PanelColumn<Application>[] = [
    {
      id: 'name',
      header: 'Name',
      className: 'applications__name',
      cell: (application) => <TruncatedText text={application.name} />,
    },
    {
      id: 'created',
      header: 'Created',
      cell: (application) => (
        <>
          <Time iso={application.createdAt} />
          {/* Who made it under when, so the panel fits beside the list at 1280 px. */}
          <div className="muted applications__by">
            by <span>{creatorText(application.createdBy)}</span>
          </div>
        </>
      ),
    },
    { id: 'lastUsed', header: 'Last used', cell: (application) => <Time iso={application.lastUsedAt} /> },
    { id: 'mails', header: 'Mails (24 h)', className: 'applications__number', cell: mailsText },
    {
      id: 'lane',
      header: 'Lane',
      cell: (application) =>
        application.revokedAt !== null ? (
          application.lane
        ) : (
          <select
            value={application.lane}
            aria-label={`Lane of ${application.name}`}
            disabled={update.isPending}
            onChange={(e) => update.mutate({ application, changes: { lane: e.target.value as Lane } })}
          >
            {LANES.map((lane) => (
              <option key={lane} value={lane}>
                {lane}
              </option>
            ))}
          </select>
        ),
    },
    { id: 'content', header: 'Content kept', cell: (application) => contentText(application.contentRetentionDays) },
    {
      id: 'state',
      header: 'State',
      cell: (application) =>
        application.revokedAt !== null ? (
          <span className="applications__state--revoked">
            Revoked <Time iso={application.revokedAt} />
          </span>
        ) : application.previousKeyExpiresAt ? (
          <span>
            Active; old key until <Time iso={application.previousKeyExpiresAt} />
          </span>
        ) : (
          'Active'
        ),
    },
    {
      id: 'actions',
      header: 'Actions',
      isHeaderHidden: true,
      cell: (application) => <div className="applications__actions">{actionsOf(application)}</div>,
    },
  ];

  const list = applications.data ?? [];
  return (
    <ModalDialog title="Applications" onClose={onClose} placement="side" className="applications">
      {revealed ? (
        <KeyReveal
          name={revealed.name}
          apiKey={revealed.key}
          previousKeyExpiresAt={revealed.previousKeyExpiresAt}
          onDismiss={() => setRevealed(null)}
        />
      ) : null}
      {creating ? (
        <form className="applications__form" onSubmit={submitCreate} aria-label="New application">
          <label className="panel__field">
            <span>Name</span>
            <input
              type="text"
              required
              maxLength={64}
              value={newName}
              onChange={(e) => setNewName(e.target.value)}
              aria-describedby="application-name-hint"
              data-autofocus
            />
          </label>
          <p id="application-name-hint" className="muted applications__hint">
            1 to 64 letters, digits or . _ @ -. The key is shown once, when it is made.
          </p>
          <label className="panel__field">
            <span>Lane</span>
            <select value={newLane} onChange={(e) => setNewLane(e.target.value as Lane)}>
              {LANES.map((lane) => (
                <option key={lane} value={lane}>
                  {lane}
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
                setCreating(false);
              }}
            >
              Cancel
            </Button>
          </div>
        </form>
      ) : (
        <div className="panel__toolbar">
          <Button variant="primary" size="small" onClick={() => setCreating(true)} data-autofocus>
            New application
          </Button>
          <Button size="small" variant="ghost" onClick={onClose}>
            Close
          </Button>
        </div>
      )}
      <p role="status" className="muted applications__notice">
        {notice ?? ''}
      </p>
      <PanelTable
        label="Applications"
        columns={columns}
        rows={list}
        rowKey={(application) => application.id}
        rowClassName={(application) => (application.revokedAt !== null ? 'applications__revoked' : undefined)}
        load={applications}
        emptyText="No applications yet. Create one to give a program a key to submit mail with."
        errorText="The applications could not be loaded."
      />
    </ModalDialog>
  );
}
