import type { Mail } from '@outbox/contract';
import type { ListSort } from '../api/list-mails';
import { STATUSES } from '@outbox/contract/status';
import { createColumnHelper, type ColumnDef, type RowData } from '@tanstack/react-table';
import { SelectAllCheckbox } from './select-all-checkbox';
import { Button } from '../../../components/ui/button';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { formatDate } from '../../../lib/format-date';
import { DateText } from './date-cell';
import { StatusCell } from './status-cell';
import {
  ACTION_COLUMN_ID,
  ACTION_COLUMN_WIDTH,
  DEFAULT_COLUMN_SIZES,
  MAX_COLUMN_SIZE,
  MIN_COLUMN_SIZE,
  SELECT_COLUMN_ID,
  SELECT_COLUMN_WIDTH,
} from './table-layout';

/** Which server sort key a column header sorts by (columns without one are not sortable). */
export const SORT_KEY_OF_COLUMN: Partial<Record<string, ListSort>> = {
  from: 'from',
  // The server sorts To by its first recipient's address.
  to: 'to',
  subject: 'subject',
  status: 'status',
  providerSentDate: 'providerSentDate',
  receivedDate: 'receivedDate',
  lastUpdate: 'lastUpdate',
};

export interface RowActions {
  onDequeue: (id: number) => void;
  onDelete: (id: number) => void;
  /** Ids with an action in flight: their button is disabled until it settles. */
  pendingIds: ReadonlySet<number>;
}

/** The tooltip of a cell: the full value, or the exact UTC instant for dates. */
export function cellTitle(mail: Mail, columnId: string): string | undefined {
  switch (columnId) {
    case 'from':
      return `${mail.fromName}\n${mail.fromMail}`;
    case 'to':
      return mail.to.map(recipientLine).join('\n');
    case 'subject':
      return mail.subject;
    case 'providerSentDate':
    case 'receivedDate':
    case 'lastUpdate':
      return formatDate(mail[columnId])?.utc;
    default:
      return undefined;
  }
}

function recipientLine(recipient: Mail['to'][number]): string {
  return `${recipient.recipientName} | ${recipient.recipientMail}`;
}

/**
 * One line per recipient (docs/console.md §2), all of them in the cell (its tooltip and screen readers get every one).
 * Three lines fit a 60 px row; with more, a visible "+N more" cue (CSS generated content, so the cell's text
 * stays exactly the recipient lines) says how many are below the fold.
 */
const VISIBLE_RECIPIENT_LINES = 3;

function RecipientLines({ recipients }: { recipients: Mail['to'] }) {
  const hidden = recipients.length - VISIBLE_RECIPIENT_LINES;
  return (
    <div className={hidden > 0 ? 'stack has-more' : 'stack'} data-more={hidden > 0 ? `+${hidden} more` : undefined}>
      {recipients.map((recipient, index) => (
        <TruncatedText key={index} text={recipientLine(recipient)} title={null} />
      ))}
    </div>
  );
}

/** The header checkbox's state and action: the table draws no rows of its own (`data` is empty), so it is handed in. */
export interface PageSelection {
  /** Every row of the page is selected. */
  checked: boolean;
  /** Some rows of the page are selected, not all. */
  indeterminate: boolean;
  /** The page has no rows. */
  disabled: boolean;
  onChange: (checked: boolean) => void;
}

declare module '@tanstack/react-table' {
  // Declaration merging: the interface and its type parameter must match TanStack's own.
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  interface TableMeta<TData extends RowData> {
    pageSelection?: PageSelection;
  }
}

const column = createColumnHelper<Mail>();

const sized = { size: 0, minSize: MIN_COLUMN_SIZE, maxSize: MAX_COLUMN_SIZE };

const fixed = (width: number) => ({ size: width, minSize: width, maxSize: width, enableSorting: false, enableResizing: false });

const dataColumn = (id: keyof typeof DEFAULT_COLUMN_SIZES, header: string) =>
  column.display({ id, header, ...sized, size: DEFAULT_COLUMN_SIZES[id] });

/**
 * The columns as TanStack Table knows them: headers, sizes and order (it sizes, resizes and orders them). The
 * table is given no rows: the body's cells are drawn by MailCell below, not through its per-row model, which
 * at 50 rows was a third of the script time between an answer and its rows (bench/console-latency.ts).
 */
export const MAIL_COLUMNS = [
  column.display({
    id: SELECT_COLUMN_ID,
    // docs/console.md §10: an addition before the spec's columns; the grid stays one tab stop (Space on a row
    // selects it), so the row checkboxes are for the mouse and named for screen readers.
    ...fixed(SELECT_COLUMN_WIDTH),
    header: ({ table }) => {
      const page = table.options.meta?.pageSelection;
      return page ? (
        <SelectAllCheckbox checked={page.checked} indeterminate={page.indeterminate} disabled={page.disabled} onChange={page.onChange} />
      ) : null;
    },
  }),
  dataColumn('from', 'From'),
  dataColumn('to', 'To'),
  dataColumn('subject', 'Subject'),
  dataColumn('status', 'Status'),
  dataColumn('providerSentDate', 'ProviderSentDate'),
  dataColumn('receivedDate', 'ReceivedDate'),
  dataColumn('lastUpdate', 'LastUpdate'),
  // docs/console.md §2: unnamed, width 70, cannot be sorted, resized or dragged.
  column.display({ id: ACTION_COLUMN_ID, header: '', ...fixed(ACTION_COLUMN_WIDTH) }),
] as ColumnDef<Mail, unknown>[];

export interface MailCellProps {
  columnId: string;
  mail: Mail;
  selected: boolean;
  /** A dequeue or delete of this mail is in flight: its button is disabled until it settles. */
  pending: boolean;
  onToggleSelected: () => void;
  onDequeue: (id: number) => void;
  onDelete: (id: number) => void;
}

/** What one body cell shows (inside the row's `td`, which carries the tooltip: cellTitle). */
export function MailCell({ columnId, mail, selected, pending, onToggleSelected, onDequeue, onDelete }: MailCellProps) {
  switch (columnId) {
    case SELECT_COLUMN_ID:
      return (
        <input
          type="checkbox"
          className="select-box"
          checked={selected}
          onChange={onToggleSelected}
          aria-label={`Select mail #${mail.id}`}
          tabIndex={-1}
        />
      );
    case 'from':
      return (
        <div className="stack">
          <TruncatedText text={mail.fromName} title={null} className="strong" />
          <TruncatedText text={mail.fromMail} title={null} className="muted" />
        </div>
      );
    case 'to':
      return <RecipientLines recipients={mail.to} />;
    case 'subject':
      return <TruncatedText text={mail.subject} title={null} />;
    case 'status':
      return <StatusCell status={mail.status} rejectedRecipients={mail.rejectedRecipients} recipientCount={mail.recipientCount} />;
    case 'providerSentDate':
    case 'receivedDate':
    case 'lastUpdate':
      return <DateText value={mail[columnId]} />;
    case ACTION_COLUMN_ID: {
      const action = Number.isInteger(mail.status) ? STATUSES[mail.status]?.action : undefined;
      if (!action) return null;
      const onClick = action === 'Dequeue' ? onDequeue : onDelete;
      return (
        <Button
          size="small"
          variant={action === 'Delete' ? 'danger' : 'secondary'}
          disabled={pending}
          onClick={() => onClick(mail.id)}
          // The visible text stays the spec's "Dequeue"/"Delete"; the accessible name says which mail.
          aria-label={`${action} mail #${mail.id}`}
          // Reached with → from its row: the grid is one tab stop.
          tabIndex={-1}
        >
          {action}
        </Button>
      );
    }
    default:
      return null;
  }
}
