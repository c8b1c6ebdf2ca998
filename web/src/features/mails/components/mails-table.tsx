import { memo, useMemo, useRef, useState, type CSSProperties, type KeyboardEvent, type MouseEvent } from 'react';
import type { Mail } from '@outbox/contract';
import {
  flexRender,
  getCoreRowModel,
  useReactTable,
  type Row,
  type RowSelectionState,
  type SortingState,
  type Updater,
} from '@tanstack/react-table';
import type { ListSort, SortOrder } from '../api/list-mails';
import { cellTitle, createMailColumns, type RowActions } from './mails-columns';
import { HeaderCell } from './mails-table-header';
import { HEADER_HEIGHT, ROW_HEIGHT } from './table-layout';
import { gridTemplateOf, useTableLayout } from './use-table-layout';

interface MailsTableProps {
  mails: Mail[];
  sort: ListSort;
  order: SortOrder;
  onSort: (sort: ListSort) => void;
  actions: RowActions;
  rowSelection: RowSelectionState;
  onRowSelectionChange: (updater: Updater<RowSelectionState>) => void;
  /** True before the first answer: the empty body reads "Loading…" instead of "No data to display". */
  isLoading: boolean;
  isFetching: boolean;
  /** Opens the detail drawer of a mail (row click, Enter on a row). */
  onOpen: (id: number) => void;
  /** The mail whose detail is open, marked on its row. */
  openId: number | null;
}

export function MailsTable({
  mails,
  sort,
  order,
  onSort,
  actions,
  rowSelection,
  onRowSelectionChange,
  isLoading,
  isFetching,
  onOpen,
  openId,
}: MailsTableProps) {
  const layout = useTableLayout();

  const columns = useMemo(() => createMailColumns(actions), [actions]);
  const sorting: SortingState = useMemo(() => [{ id: sort, desc: order === 'desc' }], [sort, order]);

  const table = useReactTable({
    data: mails,
    columns,
    getRowId: (mail) => String(mail.id),
    getCoreRowModel: getCoreRowModel(),
    manualPagination: true,
    manualSorting: true,
    enableSortingRemoval: false,
    enableMultiRowSelection: true,
    columnResizeMode: 'onChange',
    state: { sorting, rowSelection, columnOrder: layout.columnOrder, columnSizing: layout.sizing },
    onRowSelectionChange,
    onColumnSizingChange: layout.onSizingChange,
  });

  const headers = table.getFlatHeaders();
  const isResizing = Boolean(table.getState().columnSizingInfo.isResizingColumn);
  const gridTemplateColumns = gridTemplateOf(headers.map((header) => ({ id: header.column.id, size: header.getSize() })));
  const minWidth = headers.reduce((sum, header) => sum + header.getSize(), 0);
  const rowStyle: CSSProperties = { gridTemplateColumns };

  function toggleRow(rowId: string) {
    onRowSelectionChange((current) => {
      const next = { ...current };
      if (next[rowId]) delete next[rowId];
      else next[rowId] = true;
      return next;
    });
  }

  function handleRowClick(event: MouseEvent<HTMLTableRowElement>, rowId: string) {
    // A click on the row's button acts on the mail, not on the selection.
    if ((event.target as HTMLElement).closest('button, a, input')) return;
    toggleRow(rowId);
    onOpen(Number(rowId));
  }

  /**
   * The body is one tab stop (a grid with roving focus): ↑/↓, Home/End and PageUp/PageDown move between rows,
   * → goes to the row's button and ← back, Enter opens the detail, Space selects.
   */
  function handleRowKeyDown(event: KeyboardEvent<HTMLTableRowElement>, rowId: string) {
    const rowElement = event.currentTarget;
    if (event.target !== rowElement) {
      if (event.key === 'ArrowLeft') {
        event.preventDefault();
        rowElement.focus();
      }
      return;
    }
    const allRows = [...(rowElement.parentElement?.querySelectorAll<HTMLElement>(':scope > tr[data-mail-id]') ?? [])];
    const index = allRows.indexOf(rowElement);
    const moveTo: Partial<Record<string, number>> = {
      ArrowDown: index + 1,
      ArrowUp: index - 1,
      Home: 0,
      End: allRows.length - 1,
      PageDown: index + 10,
      PageUp: index - 10,
    };
    const target = moveTo[event.key];
    if (target !== undefined) {
      event.preventDefault();
      allRows[Math.max(0, Math.min(allRows.length - 1, target))]?.focus();
    } else if (event.key === 'ArrowRight') {
      event.preventDefault();
      rowElement.querySelector<HTMLElement>('button')?.focus();
    } else if (event.key === ' ' || event.key === 'Spacebar') {
      event.preventDefault();
      toggleRow(rowId);
    } else if (event.key === 'Enter') {
      event.preventDefault();
      onOpen(Number(rowId));
    }
  }

  // The rows get handlers that never change identity (they call the latest closures through a ref), so a
  // memoized row re-renders only when its own mail, selection, focus or the column layout changes: a click
  // that selects one row and opens its detail re-renders two rows, not fifty.
  // The row that holds the grid's one tab stop: the last one focused while it is still shown, else the first.
  const [activeId, setActiveId] = useState<string | null>(null);
  // The rows get handlers that never change identity (they call the latest closures through a ref), so a
  // memoized row re-renders only when its own mail, selection, focus or the column layout changes: a click
  // that selects one row and opens its detail re-renders two rows, not fifty.
  const latest = useRef({ handleRowClick, handleRowKeyDown });
  latest.current = { handleRowClick, handleRowKeyDown };
  const rowHandlers = useMemo<RowHandlers>(
    () => ({
      onClick: (event, rowId) => latest.current.handleRowClick(event, rowId),
      onKeyDown: (event, rowId) => latest.current.handleRowKeyDown(event, rowId),
      onFocus: setActiveId,
    }),
    [],
  );
  // What the cells depend on besides their row: the columns (new ones when a row action starts or ends),
  // their order, their sizes (gridTemplateColumns).
  const columnKey = headers.map((header) => header.column.id).join(',');

  const rows = table.getRowModel().rows;
  const tabStopId = rows.some((row) => row.id === activeId) ? activeId : (rows[0]?.id ?? null);

  return (
    <div className="table-scroll">
      <div className={`progress${isFetching ? ' is-active' : ''}`} aria-hidden="true" />
      <table id="mails-grid" role="grid" className="mails-table" aria-label="Mails" aria-busy={isFetching} style={{ minWidth }}>
        <thead>
          <tr style={{ ...rowStyle, height: HEADER_HEIGHT }}>
            {headers.map((header) => (
              <HeaderCell
                key={header.id}
                header={header}
                sort={sort}
                order={order}
                onSort={onSort}
                layout={layout}
                isResizing={isResizing}
              />
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr className="empty-row" style={{ height: ROW_HEIGHT }}>
              <td colSpan={headers.length}>{isLoading ? 'Loading…' : 'No data to display'}</td>
            </tr>
          ) : (
            rows.map((row) => (
              <MailRow
                key={row.id}
                row={row}
                mail={row.original}
                selected={row.getIsSelected()}
                isOpen={openId === row.original.id}
                isTabStop={row.id === tabStopId}
                gridTemplateColumns={gridTemplateColumns}
                columns={columns}
                columnOrder={columnKey}
                handlers={rowHandlers}
              />
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

interface RowHandlers {
  onClick: (event: MouseEvent<HTMLTableRowElement>, rowId: string) => void;
  onKeyDown: (event: KeyboardEvent<HTMLTableRowElement>, rowId: string) => void;
  onFocus: (rowId: string) => void;
}

interface MailRowProps {
  row: Row<Mail>;
  /** The row's mail: a changed mail (a live update) is a new object, so the row renders again. */
  mail: Mail;
  selected: boolean;
  isOpen: boolean;
  isTabStop: boolean;
  gridTemplateColumns: string;
  /** The cells are read from `row`; these tell memo when they change: the column definitions and their order. */
  columns: unknown;
  columnOrder: string;
  handlers: RowHandlers;
}

const MailRow = memo(function MailRow({ row, mail, selected, isOpen, isTabStop, gridTemplateColumns, handlers }: MailRowProps) {
  return (
    <tr
      className={[selected ? 'is-selected' : '', isOpen ? 'is-open' : ''].filter(Boolean).join(' ') || undefined}
      data-mail-id={mail.id}
      aria-selected={selected}
      tabIndex={isTabStop ? 0 : -1}
      onFocus={() => handlers.onFocus(row.id)}
      style={{ gridTemplateColumns, height: ROW_HEIGHT }}
      onClick={(event) => handlers.onClick(event, row.id)}
      onKeyDown={(event) => handlers.onKeyDown(event, row.id)}
    >
      {row.getVisibleCells().map((cell) => (
        <td key={cell.id} role="gridcell" className={`td td--${cell.column.id}`} title={cellTitle(mail, cell.column.id)}>
          {flexRender(cell.column.columnDef.cell, cell.getContext())}
        </td>
      ))}
    </tr>
  );
});
