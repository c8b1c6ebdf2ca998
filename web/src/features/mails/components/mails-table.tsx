import { useLayoutEffect, useMemo, useRef, type Ref } from 'react';
import type { Mail } from '@outbox/contract';
import type { RowSelectionState, Updater } from '@tanstack/react-table';
import type { ListSort, SortOrder } from '../api/list-mails';
import { MailRow, type RowHandlers } from './mail-row';
import type { RowActions } from './mails-columns';
import { HeaderCell } from './mails-table-header';
import { handleRowClick, handleRowKeyDown, handleRowPointerDown, type RowEventContext } from './row-events';
import { pageSelectionOf, toggleRow } from './row-selection';
import { ROW_HEIGHT } from './table-layout';
import { useColumnTable } from './use-column-table';
import { useMailsTableHandle, type MailsTableHandle, type TableFocusState } from './use-mails-table-handle';
import { useRowFocus, useTabStop } from './use-row-focus';
import { useRowVirtualizer } from './use-row-virtualizer';
import { useTableLayout } from './use-table-layout';

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
  /** A row was pressed (the click that opens it may follow): its detail can start loading. */
  onPress?: (id: number) => void;
  /** The mail whose detail is open, marked on its row. */
  openId: number | null;
  /** Moves keyboard focus among the rows for the view (after an action, a closed drawer, the skip link). */
  ref?: Ref<MailsTableHandle>;
}

/**
 * The mails grid: the columns (use-column-table), the header checkbox and row selection (row-selection), the
 * rows' pointer and keyboard (row-events), the roving tab stop and focus moves (use-row-focus), the virtual
 * body (use-row-virtualizer) and the view's handle (use-mails-table-handle), put together here.
 */
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
  onPress,
  openId,
  ref,
}: MailsTableProps) {
  const layout = useTableLayout();
  const scrollRef = useRef<HTMLDivElement>(null);
  const pageSelection = pageSelectionOf(mails, rowSelection, onRowSelectionChange);
  const { headers, isResizing, tableStyle, columns } = useColumnTable(sort, order, layout, pageSelection);

  const { activeId, setActiveId, tabStopIndex, tabStopId } = useTabStop(mails);
  const virtualizer = useRowVirtualizer(mails.length, scrollRef, tabStopIndex);
  const { rowElements, registerRow, focusRowAt } = useRowFocus(mails, virtualizer, setActiveId);

  // The rows get handlers that never change identity (they call the latest closures through a ref), so a
  // memoized row re-renders only when its own mail, selection, pending action, focus or the column order changes:
  // a click that selects one row and opens its detail re-renders two rows, not fifty; a column resize, none.
  const context: RowEventContext & TableFocusState & { actions: RowActions } = {
    mails,
    focusRowAt,
    toggleRow: (rowId) => toggleRow(onRowSelectionChange, rowId),
    onOpen,
    onPress,
    actions,
    activeId,
    tabStopId,
  };
  const latest = useRef(context);
  // Before any effect of this render and before the view's: the handle and the row handlers read it only then.
  useLayoutEffect(() => {
    latest.current = context;
  });
  const rowHandlers = useMemo<RowHandlers>(
    () => ({
      onClick: (event, rowId) => handleRowClick(latest.current, event, rowId),
      onPointerDown: (event, rowId) => handleRowPointerDown(latest.current, event, rowId),
      onKeyDown: (event, rowId) => handleRowKeyDown(latest.current, event, rowId),
      onFocus: setActiveId,
      onToggleSelected: (rowId) => latest.current.toggleRow(rowId),
      onDequeue: (id) => latest.current.actions.onDequeue(id),
      onDelete: (id) => latest.current.actions.onDelete(id),
    }),
    [setActiveId],
  );
  useMailsTableHandle(ref, mails, latest, rowElements);

  return (
    <div className="table-scroll" ref={scrollRef}>
      <div className={`progress${isFetching ? ' is-active' : ''}`} aria-hidden="true" />
      <table
        id="mails-grid"
        role="grid"
        className="mails-table"
        aria-label="Mails"
        aria-busy={isFetching}
        // The header row and every row of the page (or the one empty row), mounted or not.
        aria-rowcount={1 + Math.max(mails.length, 1)}
        style={tableStyle}
      >
        <thead>
          <tr aria-rowindex={1}>
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
        {mails.length === 0 ? (
          <tbody>
            <tr className="empty-row" aria-rowindex={2}>
              <td colSpan={headers.length}>{isLoading ? 'Loading…' : 'No data to display'}</td>
            </tr>
          </tbody>
        ) : (
          // The body is as tall as the whole page of rows; each mounted row sits at its place in it.
          <tbody className="is-virtual" style={{ height: mails.length * ROW_HEIGHT }}>
            {virtualizer.getVirtualItems().map((item) => {
              const mail = mails[item.index]!;
              const rowId = String(mail.id);
              return (
                <MailRow
                  key={rowId}
                  rowId={rowId}
                  rowIndex={item.index}
                  mail={mail}
                  selected={rowSelection[rowId] === true}
                  pending={actions.pendingIds.has(mail.id)}
                  isOpen={openId === mail.id}
                  isTabStop={rowId === tabStopId}
                  columns={columns}
                  handlers={rowHandlers}
                  rowRef={registerRow}
                />
              );
            })}
          </tbody>
        )}
      </table>
    </div>
  );
}
