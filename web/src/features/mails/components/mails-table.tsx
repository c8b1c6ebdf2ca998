import { useMemo, useState, type CSSProperties, type KeyboardEvent, type MouseEvent } from 'react';
import type { Mail } from '@outbox/contract';
import { flexRender, getCoreRowModel, useReactTable, type RowSelectionState, type SortingState, type Updater } from '@tanstack/react-table';
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

  const rows = table.getRowModel().rows;
  // The row that holds the grid's one tab stop: the last one focused while it is still shown, else the first.
  const [activeId, setActiveId] = useState<string | null>(null);
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
            rows.map((row) => {
              const selected = row.getIsSelected();
              return (
                <tr
                  key={row.id}
                  className={
                    [selected ? 'is-selected' : '', openId === row.original.id ? 'is-open' : ''].filter(Boolean).join(' ') || undefined
                  }
                  data-mail-id={row.original.id}
                  aria-selected={selected}
                  tabIndex={row.id === tabStopId ? 0 : -1}
                  onFocus={() => setActiveId(row.id)}
                  style={{ ...rowStyle, height: ROW_HEIGHT }}
                  onClick={(event) => handleRowClick(event, row.id)}
                  onKeyDown={(event) => handleRowKeyDown(event, row.id)}
                >
                  {row.getVisibleCells().map((cell) => (
                    <td
                      key={cell.id}
                      role="gridcell"
                      className={`td td--${cell.column.id}`}
                      title={cellTitle(row.original, cell.column.id)}
                    >
                      {flexRender(cell.column.columnDef.cell, cell.getContext())}
                    </td>
                  ))}
                </tr>
              );
            })
          )}
        </tbody>
      </table>
    </div>
  );
}
