import type { ReactNode } from 'react';
import type { Mail } from '@outbox/contract';
import type { HeaderContext, RowData } from '@tanstack/react-table';
import type { ListSort } from '../api/list-mails';
import { STATUSES } from '@outbox/contract/status';
import { SelectAllCheckbox } from './select-all-checkbox';
import { Button } from '../../../components/ui/button';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { formatDate } from '../../../lib/format-date';
import { DateText } from './date-cell';
import { StatusCell } from './status-cell';

/**
 * The mails table's columns, each declared once here: a new column is one entry of MAIL_COLUMNS. The header
 * (TanStack Table, mails-table.tsx), the body rows (MailRow), the sort buttons (mails-table-header.tsx) and
 * the column layout (order, widths, grid template: table-layout.ts, use-table-layout.ts) all read this list.
 */

export interface RowActions {
  onDequeue: (id: number) => void;
  onDelete: (id: number) => void;
  /** Ids with an action in flight: their button is disabled until it settles. */
  pendingIds: ReadonlySet<number>;
}

/** What a body cell gets besides its mail: the row's state and actions (one object per row render, shared by its cells). */
export interface RowCellProps {
  selected: boolean;
  /** A dequeue or delete of this mail is in flight: its button is disabled until it settles. */
  pending: boolean;
  onToggleSelected: () => void;
  onDequeue: (id: number) => void;
  onDelete: (id: number) => void;
}

interface ColumnBase<Id extends string> {
  /** The column's id: the key of the layout's order and widths, and the cell classes `th--{id}` / `td--{id}`. */
  id: Id;
  /** The header's text, or what it draws (TanStack's header context: the table's `meta`). */
  header: string | ((context: HeaderContext<Mail, unknown>) => ReactNode);
  /**
   * What one body cell shows. It is called by the row for each mail, not mounted, so it cannot hold hooks:
   * the body stays plain elements per cell (ARCHITECTURE.md, "Rendering the list").
   */
  cell: (mail: Mail, row: RowCellProps) => ReactNode;
  /** The cell's tooltip (the `td`'s title): the full value, or the exact UTC instant for dates. */
  title?: (mail: Mail) => string | undefined;
}

/** A column of the spec: the operator resizes and moves it; it sorts the list when it has a `sortKey`. */
export interface DataColumn<Id extends string = string> extends ColumnBase<Id> {
  kind: 'data';
  /** Default width in CSS pixels (the operator's own is remembered per browser). */
  size: number;
  /**
   * How it shares the width beyond the sum of sizes (wide screens): text columns take most of it, dates and
   * status barely grow. The defaults (with the fixed columns) fit 1280 px without a horizontal scroll bar.
   */
  growth: number;
  /** The server sort a click on the header asks for; none: not sortable. */
  sortKey?: ListSort;
}

/** A column that is not sorted, resized or moved, and keeps its place (before or after the data columns). */
export interface FixedColumn<Id extends string = string> extends ColumnBase<Id> {
  kind: 'fixed';
  width: number;
  /** The header's accessible name, when it shows no text. */
  ariaLabel?: string;
}

export type MailColumn = DataColumn | FixedColumn;

const dataColumn = <const Id extends string>(column: Omit<DataColumn<Id>, 'kind'>): DataColumn<Id> => ({ kind: 'data', ...column });
const fixedColumn = <const Id extends string>(column: Omit<FixedColumn<Id>, 'kind'>): FixedColumn<Id> => ({ kind: 'fixed', ...column });

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

/** A date column: local time in the cell, the exact UTC instant as its tooltip. */
const dateColumn = <const Id extends 'providerSentDate' | 'receivedDate' | 'lastUpdate'>(id: Id, header: string) =>
  dataColumn({
    id,
    header,
    size: 158,
    growth: 0.2,
    sortKey: id,
    cell: (mail) => <DateText value={mail[id]} />,
    title: (mail) => formatDate(mail[id])?.utc,
  });

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

/** The columns in their default order (the operator's order of the data columns is kept per browser). */
export const MAIL_COLUMNS = [
  // docs/console.md §10: an addition before the spec's columns; the grid stays one tab stop (Space on a row
  // selects it), so the row checkboxes are for the mouse and named for screen readers.
  fixedColumn({
    id: 'select',
    width: 40,
    header: ({ table }) => {
      const page = table.options.meta?.pageSelection;
      return page ? (
        <SelectAllCheckbox checked={page.checked} indeterminate={page.indeterminate} disabled={page.disabled} onChange={page.onChange} />
      ) : null;
    },
    cell: (mail, row) => (
      <input
        type="checkbox"
        className="select-box"
        checked={row.selected}
        onChange={row.onToggleSelected}
        aria-label={`Select mail #${mail.id}`}
        tabIndex={-1}
      />
    ),
  }),
  dataColumn({
    id: 'from',
    header: 'From',
    size: 160,
    growth: 1.2,
    sortKey: 'from',
    cell: (mail) => (
      <div className="stack">
        <TruncatedText text={mail.fromName} title={null} className="strong" />
        <TruncatedText text={mail.fromMail} title={null} className="muted" />
      </div>
    ),
    title: (mail) => `${mail.fromName}\n${mail.fromMail}`,
  }),
  dataColumn({
    id: 'to',
    header: 'To',
    size: 180,
    growth: 1.2,
    // The server sorts To by its first recipient's address.
    sortKey: 'to',
    cell: (mail) => <RecipientLines recipients={mail.to} />,
    title: (mail) => mail.to.map(recipientLine).join('\n'),
  }),
  dataColumn({
    id: 'subject',
    header: 'Subject',
    size: 180,
    growth: 1.8,
    sortKey: 'subject',
    cell: (mail) => <TruncatedText text={mail.subject} title={null} />,
    title: (mail) => mail.subject,
  }),
  dataColumn({
    id: 'status',
    header: 'Status',
    size: 150,
    growth: 0.3,
    sortKey: 'status',
    cell: (mail) => (
      <StatusCell
        status={mail.status}
        rejectedRecipients={mail.rejectedRecipients}
        recipientCount={mail.recipientCount}
        sendAt={mail.sendAt}
      />
    ),
  }),
  dateColumn('providerSentDate', 'ProviderSentDate'),
  dateColumn('receivedDate', 'ReceivedDate'),
  dateColumn('lastUpdate', 'LastUpdate'),
  // docs/console.md §2: unnamed, width 70, cannot be sorted, resized or dragged.
  fixedColumn({
    id: 'actions',
    width: 70,
    header: () => null,
    ariaLabel: 'Actions',
    cell: (mail, row) => {
      const action = Number.isInteger(mail.status) ? STATUSES[mail.status]?.action : undefined;
      if (!action) return null;
      const onClick = action === 'Dequeue' ? row.onDequeue : row.onDelete;
      return (
        <Button
          size="small"
          variant={action === 'Delete' ? 'danger' : 'secondary'}
          disabled={row.pending}
          onClick={() => onClick(mail.id)}
          // The visible text stays the spec's "Dequeue"/"Delete"; the accessible name says which mail.
          aria-label={`${action} mail #${mail.id}`}
          // Reached with → from its row: the grid is one tab stop.
          tabIndex={-1}
        >
          {action}
        </Button>
      );
    },
  }),
] as const;

type DataColumnOf<Column> = Column extends DataColumn<infer Id> ? Id : never;
export type DataColumnId = DataColumnOf<(typeof MAIL_COLUMNS)[number]>;

const isDataColumn = (column: MailColumn): column is DataColumn => column.kind === 'data';

/** The data columns' ids in their default order. */
export const DATA_COLUMN_IDS: readonly DataColumnId[] = MAIL_COLUMNS.filter(isDataColumn).map((column) => column.id as DataColumnId);

const COLUMN_BY_ID: ReadonlyMap<string, MailColumn> = new Map(MAIL_COLUMNS.map((column) => [column.id, column]));

/** The column of an id; undefined for an id no column has (a stale layout, a header of another table). */
export function columnOf(id: string): MailColumn | undefined {
  return COLUMN_BY_ID.get(id);
}

/** The data column of an id: undefined for a fixed column or an unknown id. */
export function dataColumnOf(id: string): DataColumn | undefined {
  const column = COLUMN_BY_ID.get(id);
  return column?.kind === 'data' ? column : undefined;
}

/**
 * Every column's id in display order: the fixed columns where they are declared, the data columns in the
 * operator's `dataOrder`.
 */
export function columnOrderOf(dataOrder: readonly string[]): string[] {
  let next = 0;
  return MAIL_COLUMNS.map((column) => (column.kind === 'data' ? (dataOrder[next++] ?? column.id) : column.id));
}
