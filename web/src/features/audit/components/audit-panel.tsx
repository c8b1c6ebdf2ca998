import type { AuditEntry } from '@outbox/contract';
import { useState } from 'react';
import { Button } from '../../../components/ui/button';
import { ErrorMessage } from '../../../components/ui/error-message';
import { LocalTime } from '../../../components/ui/local-time';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { PagedPanelTable, type PanelColumn } from '../../../components/ui/panel-table';
import { downloadAuditCsv, useAuditLog, type AuditFilters } from '../api/list-audit';
import { operatorOf, outcomeText, targetText } from './audit-text';

/** The action filter's choices: a dotted prefix matches every action under it ('mail' → mail.dequeue, mail.bulk.*, …). */
const ACTIONS: { value: string; label: string }[] = [
  { value: '', label: 'Every action' },
  { value: 'login', label: 'Logins (and failed logins)' },
  { value: 'login.failed', label: 'Failed logins' },
  { value: 'logout', label: 'Logouts' },
  { value: 'mail', label: 'Every mail action' },
  { value: 'mail.bulk', label: 'Bulk actions' },
  { value: 'mail.dequeue', label: 'Dequeue' },
  { value: 'mail.requeue', label: 'Requeue' },
  { value: 'mail.delete', label: 'Delete' },
  { value: 'mail.purge', label: 'Purge' },
  { value: 'suppression', label: 'Suppression list' },
  { value: 'apikey', label: 'API keys' },
  { value: 'operator', label: 'Operators' },
];

/** A local calendar day (yyyy-mm-dd) → its first instant; `next` → the first instant of the day after (`to` is exclusive). */
function dayToInstant(day: string, next: boolean): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!match) return '';
  const date = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + (next ? 1 : 0));
  return date.toISOString();
}

const COLUMNS: PanelColumn<AuditEntry>[] = [
  { id: 'time', header: 'Time', cell: (entry) => <LocalTime iso={entry.at} empty={null} /> },
  { id: 'operator', header: 'Operator', cell: (entry) => operatorOf(entry.actor) },
  { id: 'action', header: 'Action', cell: (entry) => entry.action },
  { id: 'mails', header: 'Mails', cell: targetText },
  { id: 'outcome', header: 'Outcome', cell: outcomeText },
];

interface AuditPanelProps {
  token: string;
  onClose: () => void;
}

/**
 * The audit log panel (docs/console.md §10): who did what, when, to which mails, with the outcome; newest first,
 * keyset paged ("Load more"), filtered by operator, action and day, exported as CSV.
 */
export function AuditPanel({ token, onClose }: AuditPanelProps) {
  const [operator, setOperator] = useState('');
  const [action, setAction] = useState('');
  const [fromDay, setFromDay] = useState('');
  const [toDay, setToDay] = useState('');
  const [downloadFailed, setDownloadFailed] = useState(false);
  const filters: AuditFilters = { operator, action, from: dayToInstant(fromDay, false), to: dayToInstant(toDay, true) };
  const log = useAuditLog(token, filters);

  return (
    <ModalDialog title="Audit log" onClose={onClose} placement="side" className="audit">
      <div className="panel__toolbar">
        <label className="panel__field">
          <span>Operator</span>
          <input type="search" value={operator} onChange={(event) => setOperator(event.target.value)} placeholder="Any" data-autofocus />
        </label>
        <label className="panel__field">
          <span>Action</span>
          <select value={action} onChange={(event) => setAction(event.target.value)}>
            {ACTIONS.map((choice) => (
              <option key={choice.value} value={choice.value}>
                {choice.label}
              </option>
            ))}
          </select>
        </label>
        <label className="panel__field">
          <span>From</span>
          <input type="date" value={fromDay} onChange={(event) => setFromDay(event.target.value)} />
        </label>
        <label className="panel__field">
          <span>To</span>
          <input type="date" value={toDay} onChange={(event) => setToDay(event.target.value)} />
        </label>
        <span className="audit__buttons">
          <Button
            size="small"
            onClick={() => {
              setDownloadFailed(false);
              downloadAuditCsv(token, filters).catch(() => setDownloadFailed(true));
            }}
          >
            Download CSV
          </Button>
          <Button size="small" variant="ghost" onClick={onClose}>
            Close
          </Button>
        </span>
      </div>
      <ErrorMessage text={downloadFailed ? 'The CSV could not be downloaded; try again.' : null} />
      <PagedPanelTable
        label="Audit entries"
        className="audit__table"
        columns={COLUMNS}
        rowKey={(entry) => entry.id}
        pages={log}
        emptyText="No entries"
        errorText="The audit log could not be loaded."
      />
    </ModalDialog>
  );
}
