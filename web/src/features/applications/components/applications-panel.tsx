import './applications.css';
import { useState } from 'react';
import { LANES, type Application, type ApplicationWithKey, type Lane } from '@outbox/contract';
import { LocalTime as Time } from '../../../components/ui/local-time';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { PanelTable, type PanelColumn } from '../../../components/ui/panel-table';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { PanelNotice } from '../../../components/ui/panel-notice';
import { PanelAddToolbar } from '../../../components/ui/panel-toolbar';
import { useApplications } from '../api/applications-api';
import { ApplicationRowActions, type RowActionKind } from './application-row-actions';
import { contentText, creatorText, mailsText } from './application-text';
import { KeyReveal } from './key-reveal';
import { EMPTY_APPLICATION_DRAFT, NewApplicationForm } from './new-application-form';
import { useApplicationActions } from './use-application-actions';

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
  const applications = useApplications(token);
  const [creating, setCreating] = useState(false);
  const [draft, setDraft] = useState(EMPTY_APPLICATION_DRAFT);
  /** The row asking something of its operator, and what. */
  const [rowAction, setRowAction] = useState<{ kind: RowActionKind; id: number } | null>(null);
  const [revealed, setRevealed] = useState<ApplicationWithKey | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const actions = useApplicationActions(token, {
    onNotice: setNotice,
    onKey: setRevealed,
    onCreated: () => {
      setCreating(false);
      setDraft(EMPTY_APPLICATION_DRAFT);
    },
    onRowDone: () => setRowAction(null),
  });
  const { update } = actions;

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
          <Time iso={application.createdAt} isBreakable />
          {/* Who made it under when, so the panel fits beside the list at 1280 px. */}
          <div className="muted applications__by">
            by <span>{creatorText(application.createdBy)}</span>
          </div>
        </>
      ),
    },
    { id: 'lastUsed', header: 'Last used', cell: (application) => <Time iso={application.lastUsedAt} isBreakable /> },
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
            Revoked <Time iso={application.revokedAt} isBreakable />
          </span>
        ) : application.previousKeyExpiresAt ? (
          <span>
            Active; old key until <Time iso={application.previousKeyExpiresAt} isBreakable />
          </span>
        ) : (
          'Active'
        ),
    },
    {
      id: 'actions',
      header: 'Actions',
      isHeaderHidden: true,
      cell: (application) => (
        <div className="applications__actions">
          <ApplicationRowActions
            application={application}
            action={rowAction?.id === application.id ? rowAction.kind : null}
            actions={actions}
            onStart={(kind) => {
              setNotice(null);
              setRowAction({ kind, id: application.id });
            }}
            onCancel={() => setRowAction(null)}
          />
        </div>
      ),
    },
  ];

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
        <NewApplicationForm create={actions.create} draft={draft} onDraftChange={setDraft} onCancel={() => setCreating(false)} />
      ) : (
        <PanelAddToolbar addText="New application" onAdd={() => setCreating(true)} onClose={onClose} />
      )}
      <PanelNotice text={notice} />
      <PanelTable
        label="Applications"
        columns={columns}
        rows={applications.data ?? []}
        rowKey={(application) => application.id}
        rowClassName={(application) => (application.revokedAt !== null ? 'applications__revoked' : undefined)}
        load={applications}
        emptyText="No applications yet. Create one to give a program a key to submit mail with."
        errorText="The applications could not be loaded."
      />
    </ModalDialog>
  );
}
