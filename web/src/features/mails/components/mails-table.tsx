import { useEffect, useMemo, useState, type CSSProperties, type DragEvent, type KeyboardEvent, type MouseEvent } from 'react';
import type { Mail, MailSort } from '@outbox/contract';
import {
  flexRender,
  getCoreRowModel,
  useReactTable,
  type ColumnSizingState,
  type Header,
  type RowSelectionState,
  type SortingState,
  type Updater,
} from '@tanstack/react-table';
import type { SortOrder } from '../api/list-mails';
import { SORT_KEY_OF_COLUMN, cellTitle, createMailColumns, type RowActions } from './mails-columns';
import {
  ACTION_COLUMN_ID,
  ACTION_COLUMN_WIDTH,
  COLUMN_GROWTH,
  DEFAULT_COLUMN_SIZES,
  HEADER_HEIGHT,
  MAX_COLUMN_SIZE,
  MIN_COLUMN_SIZE,
  ROW_HEIGHT,
  loadLayout,
  moveColumn,
  saveLayout,
  type ColumnLayout,
  type DataColumnId,
} from './table-layout';

interface MailsTableProps {
  mails: Mail[];
  sort: MailSort;
  order: SortOrder;
  onSort: (sort: MailSort) => void;
  actions: RowActions;
  rowSelection: RowSelectionState;
  onRowSelectionChange: (updater: Updater<RowSelectionState>) => void;
  /** True before the first answer: the empty body reads "Loading…" instead of "No data to display". */
  isLoading: boolean;
  isFetching: boolean;
}

const RESIZE_STEP = 16;

function applyUpdater<T>(updater: Updater<T>, previous: T): T {
  return typeof updater === 'function' ? (updater as (old: T) => T)(previous) : updater;
}

function SortIcon({ direction }: { direction: false | 'asc' | 'desc' }) {
  // An SVG, not a glyph: it adds no text to the header's name or content.
  return (
    <svg
      className={`sort-icon sort-icon--${direction || 'none'}`}
      viewBox="0 0 10 12"
      width="10"
      height="12"
      aria-hidden="true"
      focusable="false"
    >
      <path className="sort-icon__up" d="M5 0 L10 5 H0 Z" />
      <path className="sort-icon__down" d="M5 12 L10 7 H0 Z" />
    </svg>
  );
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
}: MailsTableProps) {
  const [layout, setLayout] = useState<ColumnLayout>(loadLayout);
  const [draggedId, setDraggedId] = useState<string | null>(null);
  const [dropTargetId, setDropTargetId] = useState<string | null>(null);

  useEffect(() => {
    saveLayout(layout);
  }, [layout]);

  const columns = useMemo(() => createMailColumns(actions), [actions]);
  const sorting: SortingState = useMemo(() => [{ id: sort, desc: order === 'desc' }], [sort, order]);
  const columnOrder = useMemo(() => [...layout.order, ACTION_COLUMN_ID], [layout.order]);

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
    state: { sorting, rowSelection, columnOrder, columnSizing: layout.sizing },
    onRowSelectionChange,
    onColumnSizingChange: (updater) =>
      setLayout((current) => ({ ...current, sizing: applyUpdater<ColumnSizingState>(updater, current.sizing) })),
  });

  const headers = table.getFlatHeaders();
  const isResizing = Boolean(table.getState().columnSizingInfo.isResizingColumn);
  // Data columns share the spare width in proportion to their size; the action column stays 70 px.
  const gridTemplateColumns = headers
    .map((header) =>
      header.column.id === ACTION_COLUMN_ID
        ? `${ACTION_COLUMN_WIDTH}px`
        : `minmax(${header.getSize()}px, ${Math.round(header.getSize() * (COLUMN_GROWTH[header.column.id as DataColumnId] ?? 1))}fr)`,
    )
    .join(' ');
  const minWidth = headers.reduce((sum, header) => sum + header.getSize(), 0);
  const rowStyle: CSSProperties = { gridTemplateColumns };

  function moveBy(columnId: string, delta: number) {
    setLayout((current) => {
      const index = current.order.indexOf(columnId as DataColumnId);
      const target = current.order[index + delta];
      return target === undefined ? current : { ...current, order: moveColumn(current.order, columnId, target) };
    });
  }

  function resizeBy(columnId: string, delta: number) {
    setLayout((current) => {
      const base = current.sizing[columnId] ?? DEFAULT_COLUMN_SIZES[columnId as DataColumnId] ?? MIN_COLUMN_SIZE;
      const size = Math.min(MAX_COLUMN_SIZE, Math.max(MIN_COLUMN_SIZE, base + delta));
      return { ...current, sizing: { ...current.sizing, [columnId]: size } };
    });
  }

  function handleHeaderKeyDown(event: KeyboardEvent<HTMLElement>, columnId: string) {
    if (!event.altKey || (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight')) return;
    event.preventDefault();
    const direction = event.key === 'ArrowLeft' ? -1 : 1;
    if (event.shiftKey) resizeBy(columnId, direction * RESIZE_STEP);
    else moveBy(columnId, direction);
  }

  function handleDragStart(event: DragEvent<HTMLTableCellElement>, columnId: string) {
    if (isResizing) {
      event.preventDefault();
      return;
    }
    event.dataTransfer.effectAllowed = 'move';
    event.dataTransfer.setData('text/plain', columnId);
    setDraggedId(columnId);
  }

  function handleDragOver(event: DragEvent<HTMLTableCellElement>, columnId: string) {
    if (draggedId === null || columnId === ACTION_COLUMN_ID) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'move';
    if (dropTargetId !== columnId) setDropTargetId(columnId);
  }

  function handleDrop(event: DragEvent<HTMLTableCellElement>, columnId: string) {
    event.preventDefault();
    const moved = draggedId ?? event.dataTransfer.getData('text/plain');
    if (moved && columnId !== ACTION_COLUMN_ID) {
      setLayout((current) => ({ ...current, order: moveColumn(current.order, moved, columnId) }));
    }
    setDraggedId(null);
    setDropTargetId(null);
  }

  function handleDragEnd() {
    setDraggedId(null);
    setDropTargetId(null);
  }

  function renderHeader(header: Header<Mail, unknown>) {
    const columnId = header.column.id;
    const isAction = columnId === ACTION_COLUMN_ID;
    const sortKey = SORT_KEY_OF_COLUMN[columnId];
    const direction = sortKey === sort ? order : false;
    const ariaSort = sortKey === undefined ? undefined : direction === 'asc' ? 'ascending' : direction === 'desc' ? 'descending' : 'none';
    const label = flexRender(header.column.columnDef.header, header.getContext());
    const classes = [
      'th',
      `th--${columnId}`,
      draggedId === columnId ? 'is-dragging' : '',
      dropTargetId === columnId && draggedId !== columnId ? 'is-drop-target' : '',
    ]
      .filter(Boolean)
      .join(' ');

    return (
      <th
        key={header.id}
        scope="col"
        className={classes}
        aria-sort={ariaSort}
        aria-label={isAction ? 'Actions' : undefined}
        draggable={!isAction && !isResizing}
        onDragStart={isAction ? undefined : (event) => handleDragStart(event, columnId)}
        onDragOver={(event) => handleDragOver(event, columnId)}
        onDragLeave={() => setDropTargetId((current) => (current === columnId ? null : current))}
        onDrop={(event) => handleDrop(event, columnId)}
        onDragEnd={handleDragEnd}
      >
        {isAction ? null : sortKey !== undefined ? (
          <button
            type="button"
            className="th__sort"
            onClick={() => onSort(sortKey)}
            onKeyDown={(event) => handleHeaderKeyDown(event, columnId)}
            title="Sort. Drag to move; Alt+←/→ moves, Alt+Shift+←/→ resizes"
          >
            <span className="truncate">{label}</span>
            <SortIcon direction={direction} />
          </button>
        ) : (
          <span
            className="th__label truncate"
            tabIndex={0}
            onKeyDown={(event) => handleHeaderKeyDown(event, columnId)}
            title="Drag to move; Alt+←/→ moves, Alt+Shift+←/→ resizes"
          >
            {label}
          </span>
        )}
        {header.column.getCanResize() ? (
          <div
            className={`th__resizer${header.column.getIsResizing() ? ' is-resizing' : ''}`}
            aria-hidden="true"
            onMouseDown={header.getResizeHandler()}
            onTouchStart={header.getResizeHandler()}
            onDoubleClick={() => header.column.resetSize()}
            onClick={(event) => event.stopPropagation()}
          />
        ) : null}
      </th>
    );
  }

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
  }

  function handleRowKeyDown(event: KeyboardEvent<HTMLTableRowElement>, rowId: string) {
    if (event.target !== event.currentTarget) return;
    if (event.key === ' ' || event.key === 'Spacebar') {
      event.preventDefault();
      toggleRow(rowId);
    }
  }

  const rows = table.getRowModel().rows;

  return (
    <div className="table-scroll">
      <div className={`progress${isFetching ? ' is-active' : ''}`} aria-hidden="true" />
      <table className="mails-table" aria-label="Mails" aria-busy={isFetching} style={{ minWidth }}>
        <thead>
          <tr style={{ ...rowStyle, height: HEADER_HEIGHT }}>{headers.map(renderHeader)}</tr>
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
                  className={selected ? 'is-selected' : undefined}
                  aria-selected={selected}
                  tabIndex={0}
                  style={{ ...rowStyle, height: ROW_HEIGHT }}
                  onClick={(event) => handleRowClick(event, row.id)}
                  onKeyDown={(event) => handleRowKeyDown(event, row.id)}
                >
                  {row.getVisibleCells().map((cell) => (
                    <td key={cell.id} className={`td td--${cell.column.id}`} title={cellTitle(row.original, cell.column.id)}>
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
