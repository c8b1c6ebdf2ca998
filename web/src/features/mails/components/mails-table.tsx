import {
  memo,
  useCallback,
  useEffect,
  useImperativeHandle,
  useMemo,
  useRef,
  useState,
  type CSSProperties,
  type KeyboardEvent,
  type MouseEvent,
  type PointerEvent,
  type Ref,
  type RefCallback,
} from 'react';
import { defaultRangeExtractor, useVirtualizer, type Range } from '@tanstack/react-virtual';
import type { Mail } from '@outbox/contract';
import {
  createColumnHelper,
  getCoreRowModel,
  useReactTable,
  type ColumnDef,
  type RowSelectionState,
  type SortingState,
  type Updater,
} from '@tanstack/react-table';
import type { ListSort, SortOrder } from '../api/list-mails';
import { MAIL_COLUMNS, columnOf, type MailColumn, type PageSelection, type RowActions, type RowCellProps } from './mails-columns';
import { HeaderCell } from './mails-table-header';
import { HEADER_HEIGHT, MAX_COLUMN_SIZE, MIN_COLUMN_SIZE, ROW_HEIGHT } from './table-layout';
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
  /** A row was pressed (the click that opens it may follow): its detail can start loading. */
  onPress?: (id: number) => void;
  /** The mail whose detail is open, marked on its row. */
  openId: number | null;
  /** Moves keyboard focus among the rows for the list view (after an action, a closed drawer, the skip link). */
  ref?: Ref<MailsTableHandle>;
}

/**
 * Keyboard focus on the rows, for the view around the table. The table knows its rows (elements kept by a
 * ref as they mount, in the order of `mails`), so nobody searches the document for them.
 */
export interface MailsTableHandle {
  /** Focuses the row of a mail, mounting it first if it is out of view; false when the page does not hold it. */
  focusRow: (id: number) => boolean;
  /** Focuses the row that holds the grid's one tab stop. */
  focusTabStop: () => void;
  /**
   * Notes where the row of a mail is now and gives what puts focus back there later: on the same mail's row
   * if it is still shown, else on the row now at its place. Told that the mail left (deleted), it waits
   * until the rows no longer hold it: the reload can reach the table after the action's answer.
   */
  rememberPlace: (id: number) => (mailLeft: boolean) => void;
  /**
   * Before the rows change under the operator (a live update): when focus is on a control inside a row (its
   * button, which a status change can remove), focus goes back to that row if it fell out of the table.
   */
  keepFocusInRow: () => void;
}

const NO_MAILS: Mail[] = [];

/**
 * Rows mounted beyond the viewport on each side: a wheel turn or PageDown shows rows already laid out, and a
 * page of 50 still mounts a fraction of its rows (docs/console.md §10.1).
 */
export const ROW_OVERSCAN = 5;

const columnHelper = createColumnHelper<Mail>();

/**
 * The columns as TanStack Table knows them: headers, sizes and order (it sizes, resizes and orders them). The
 * table is given no rows: the body's cells are drawn by MailRow from the same columns' `cell`, not through
 * its per-row model, which at 50 rows was a third of the script time between an answer and its rows
 * (bench/console-latency.ts).
 */
const TABLE_COLUMNS = MAIL_COLUMNS.map((column: MailColumn) =>
  column.kind === 'fixed'
    ? columnHelper.display({
        id: column.id,
        header: column.header,
        size: column.width,
        minSize: column.width,
        maxSize: column.width,
        enableSorting: false,
        enableResizing: false,
      })
    : columnHelper.display({ id: column.id, header: column.header, size: column.size, minSize: MIN_COLUMN_SIZE, maxSize: MAX_COLUMN_SIZE }),
) as ColumnDef<Mail, unknown>[];

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

  const sorting: SortingState = useMemo(() => [{ id: sort, desc: order === 'desc' }], [sort, order]);

  // The header checkbox: every row of the page, some, or none.
  const selectedOnPage = mails.reduce((count, mail) => (rowSelection[String(mail.id)] ? count + 1 : count), 0);
  const pageSelection: PageSelection = {
    checked: mails.length > 0 && selectedOnPage === mails.length,
    indeterminate: selectedOnPage > 0 && selectedOnPage < mails.length,
    disabled: mails.length === 0,
    onChange: (checked) =>
      onRowSelectionChange((current) => {
        const next = { ...current };
        for (const mail of mails) {
          if (checked) next[String(mail.id)] = true;
          else delete next[String(mail.id)];
        }
        return next;
      }),
  };

  // TanStack Table sizes, resizes and orders the columns and draws their headers. It gets no rows: the body
  // is drawn from `mails` below, and building its row model only fed the header checkbox.
  const table = useReactTable({
    data: NO_MAILS,
    columns: TABLE_COLUMNS,
    getCoreRowModel: getCoreRowModel(),
    manualPagination: true,
    manualSorting: true,
    enableSortingRemoval: false,
    columnResizeMode: 'onChange',
    state: { sorting, columnOrder: layout.columnOrder, columnSizing: layout.sizing },
    onColumnSizingChange: layout.onSizingChange,
    meta: { pageSelection },
  });

  const headers = table.getFlatHeaders();
  const isResizing = Boolean(table.getState().columnSizingInfo.isResizingColumn);
  const gridTemplateColumns = gridTemplateOf(headers.map((header) => ({ id: header.column.id, size: header.getSize() })));
  const minWidth = headers.reduce((sum, header) => sum + header.getSize(), 0);
  // The grid's template and the row heights are custom properties of the table, read by every row in the
  // stylesheet: a column resize changes one property; a row's own style is only its place (--row-index).
  const tableStyle = {
    minWidth,
    '--mail-columns': gridTemplateColumns,
    '--row-height': `${ROW_HEIGHT}px`,
    '--header-height': `${HEADER_HEIGHT}px`,
  } as CSSProperties;

  function toggleRow(rowId: string) {
    onRowSelectionChange((current) => {
      const next = { ...current };
      if (next[rowId]) delete next[rowId];
      else next[rowId] = true;
      return next;
    });
  }

  /** A click on the row's button or checkbox acts on the mail or the selection, and opens nothing. */
  const isOnControl = (event: { target: EventTarget }) => (event.target as HTMLElement).closest('button, a, input') !== null;

  function handleRowPointerDown(event: PointerEvent<HTMLTableRowElement>, rowId: string) {
    if (event.button === 0 && !isOnControl(event)) onPress?.(Number(rowId));
  }

  function handleRowClick(event: MouseEvent<HTMLTableRowElement>, rowId: string) {
    if (isOnControl(event)) return;
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
    const index = mails.findIndex((mail) => String(mail.id) === rowId);
    const moveTo: Partial<Record<string, number>> = {
      ArrowDown: index + 1,
      ArrowUp: index - 1,
      Home: 0,
      End: mails.length - 1,
      PageDown: index + 10,
      PageUp: index - 10,
    };
    const target = moveTo[event.key];
    if (target !== undefined) {
      event.preventDefault();
      focusRowAt(Math.max(0, Math.min(mails.length - 1, target)));
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

  // The row elements by row id, kept as rows mount and unmount (one ref callback for every row: see MailRow).
  const rowElements = useRef(new Map<string, HTMLTableRowElement>());
  // The row that holds the grid's one tab stop: the last one focused while it is still shown, else the first.
  const [activeId, setActiveId] = useState<string | null>(null);
  const activeIndex = mails.findIndex((mail) => String(mail.id) === activeId);
  const tabStopIndex = activeIndex >= 0 ? activeIndex : mails.length > 0 ? 0 : -1;
  const tabStopId = tabStopIndex >= 0 ? String(mails[tabStopIndex]!.id) : null;
  // A row that focus is moving to but that is not mounted yet: focused as it mounts (registerRow).
  const pendingFocusId = useRef<string | null>(null);
  // A return of focus after an action that waits for the rows to change (rememberPlace); true once done.
  const pendingPlace = useRef<(() => boolean) | null>(null);
  useEffect(() => {
    if (pendingPlace.current?.()) pendingPlace.current = null;
  }, [mails]);

  const keepTabStopMounted = useCallback(
    (range: Range) => {
      const indexes = defaultRangeExtractor(range);
      if (tabStopIndex < 0 || indexes.includes(tabStopIndex)) return indexes;
      return [...indexes, tabStopIndex].sort((a, b) => a - b);
    },
    [tabStopIndex],
  );
  // Only the rows in view (and ROW_OVERSCAN around them) are mounted: laying out and painting 50 rows of
  // this grid was most of the time between an answer and its rows at 1M mails (docs/benchmarks.md). Rows
  // have the spec's fixed height, so nothing is measured, and the virtualizer knows them by index (keyed by
  // mail, it would try to keep a row in place across a page change, scrolling to follow it). The row holding the tab stop stays mounted
  // wherever it is, so Tab always reaches the grid and a row with focus never unmounts under the operator.
  const virtualizer = useVirtualizer({
    count: mails.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: ROW_OVERSCAN,
    // The body starts below the sticky header, which also covers the top of the viewport.
    scrollMargin: HEADER_HEIGHT,
    scrollPaddingStart: HEADER_HEIGHT,
    // Before the scroll element is measured, assume the window: the first render mounts the rows in view
    // rather than none, and the measurement that follows changes nothing on a normal screen.
    initialRect: { width: window.innerWidth, height: window.innerHeight },
    rangeExtractor: keepTabStopMounted,
    // A scroll re-renders the body as an ordinary update: flushSync from the virtualizer's layout effect is
    // refused by React 19 (it warns), and ROW_OVERSCAN covers the frame a fast scroll may wait.
    useFlushSync: false,
  });

  /** Moves focus to the row at `index` of the page: scrolled into view, mounted if it was not, then focused. */
  function focusRowAt(index: number) {
    const mail = mails[index];
    if (!mail) return;
    const rowId = String(mail.id);
    virtualizer.scrollToIndex(index, { align: 'auto' });
    const element = rowElements.current.get(rowId);
    if (element) {
      focusInView(element);
    } else {
      // Becoming the tab stop keeps it in the mounted range (rangeExtractor); registerRow focuses it.
      pendingFocusId.current = rowId;
      setActiveId(rowId);
    }
  }
  // The rows get handlers that never change identity (they call the latest closures through a ref), so a
  // memoized row re-renders only when its own mail, selection, pending action, focus or the column order changes:
  // a click that selects one row and opens its detail re-renders two rows, not fifty; a column resize, none.
  const latest = useRef({
    handleRowClick,
    handleRowPointerDown,
    handleRowKeyDown,
    toggleRow,
    focusRowAt,
    actions,
    mails,
    activeId,
    tabStopId,
  });
  latest.current = { handleRowClick, handleRowPointerDown, handleRowKeyDown, toggleRow, focusRowAt, actions, mails, activeId, tabStopId };
  const rowHandlers = useMemo<RowHandlers>(
    () => ({
      onClick: (event, rowId) => latest.current.handleRowClick(event, rowId),
      onPointerDown: (event, rowId) => latest.current.handleRowPointerDown(event, rowId),
      onKeyDown: (event, rowId) => latest.current.handleRowKeyDown(event, rowId),
      onFocus: setActiveId,
      onToggleSelected: (rowId) => latest.current.toggleRow(rowId),
      onDequeue: (id) => latest.current.actions.onDequeue(id),
      onDelete: (id) => latest.current.actions.onDelete(id),
    }),
    [],
  );
  // The ref callback of every row: one function for all, so React calls it only as a row mounts or unmounts.
  const registerRow = useCallback((element: HTMLTableRowElement | null) => {
    const rowId = element?.dataset.mailId;
    if (!element || rowId === undefined) return undefined;
    const rows = rowElements.current;
    rows.set(rowId, element);
    if (pendingFocusId.current === rowId) {
      pendingFocusId.current = null;
      focusInView(element);
    }
    return () => {
      if (rows.get(rowId) === element) rows.delete(rowId);
    };
  }, []);

  useImperativeHandle(ref, () => {
    const focusRow = (id: number | string) => {
      const index = latest.current.mails.findIndex((mail) => String(mail.id) === String(id));
      if (index < 0) return false;
      latest.current.focusRowAt(index);
      return true;
    };
    return {
      focusRow,
      focusTabStop: () => {
        const { tabStopId: id } = latest.current;
        if (id !== null) focusRow(id);
      },
      rememberPlace: (id) => {
        const index = latest.current.mails.findIndex((mail) => mail.id === id);
        return (mailLeft) => {
          const returnToPlace = () => {
            const { mails: now } = latest.current;
            const stillShown = now.some((mail) => mail.id === id);
            if (stillShown && mailLeft) return false; // the rows are not reloaded yet: try again when they are
            if (stillShown) focusRow(id);
            else {
              const inItsPlace = now[Math.min(Math.max(index, 0), now.length - 1)];
              if (inItsPlace) focusRow(inItsPlace.id);
            }
            return true;
          };
          pendingPlace.current = returnToPlace() ? null : returnToPlace;
        };
      },
      keepFocusInRow: () => {
        const { activeId: id } = latest.current;
        const row = id === null ? undefined : rowElements.current.get(id);
        const active = document.activeElement;
        if (id === null || !row || active === row || !row.contains(active)) return;
        window.requestAnimationFrame(() => {
          if (document.activeElement === document.body || document.activeElement === null) focusRow(id);
        });
      },
    };
  }, []);
  // The cells of every row, in the columns' order (a new array only when the order changes).
  const columnKey = headers.map((header) => header.column.id).join(',');
  const columns = useMemo(() => columnKey.split(',').flatMap((id) => columnOf(id) ?? []), [columnKey]);

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

interface RowHandlers {
  onClick: (event: MouseEvent<HTMLTableRowElement>, rowId: string) => void;
  onPointerDown: (event: PointerEvent<HTMLTableRowElement>, rowId: string) => void;
  onKeyDown: (event: KeyboardEvent<HTMLTableRowElement>, rowId: string) => void;
  onFocus: (rowId: string) => void;
  onToggleSelected: (rowId: string) => void;
  onDequeue: (id: number) => void;
  onDelete: (id: number) => void;
}

interface MailRowProps {
  /** The mail's id as TanStack Table's row id (the key of the selection state). */
  rowId: string;
  /** The row's place in the page, from 0: its aria-rowindex (the header is row 1) and its offset in the body. */
  rowIndex: number;
  /** The row's mail: a changed mail (a live update) is a new object, so the row renders again. */
  mail: Mail;
  selected: boolean;
  pending: boolean;
  isOpen: boolean;
  isTabStop: boolean;
  /** The columns shown, in order. */
  columns: readonly MailColumn[];
  handlers: RowHandlers;
  /** Keeps the row's element for the table's focus moves (MailsTableHandle). */
  rowRef: RefCallback<HTMLTableRowElement>;
}

const MailRow = memo(function MailRow({
  rowId,
  rowIndex,
  mail,
  selected,
  pending,
  isOpen,
  isTabStop,
  columns,
  handlers,
  rowRef,
}: MailRowProps) {
  // One object for the row's cells (their checkbox and button), made when the row renders.
  const cellProps: RowCellProps = {
    selected,
    pending,
    onToggleSelected: () => handlers.onToggleSelected(rowId),
    onDequeue: handlers.onDequeue,
    onDelete: handlers.onDelete,
  };
  return (
    <tr
      ref={rowRef}
      className={[selected ? 'is-selected' : '', isOpen ? 'is-open' : ''].filter(Boolean).join(' ') || undefined}
      data-mail-id={mail.id}
      aria-rowindex={rowIndex + 2}
      // Its place in the body as a CSS variable: the stylesheet turns it into an offset (.is-virtual).
      style={{ '--row-index': rowIndex } as CSSProperties}
      aria-selected={selected}
      tabIndex={isTabStop ? 0 : -1}
      onFocus={() => handlers.onFocus(rowId)}
      onClick={(event) => handlers.onClick(event, rowId)}
      onPointerDown={(event) => handlers.onPointerDown(event, rowId)}
      onKeyDown={(event) => handlers.onKeyDown(event, rowId)}
    >
      {columns.map((column) => (
        <td key={column.id} role="gridcell" className={`td td--${column.id}`} title={column.title?.(mail)}>
          {column.cell(mail, cellProps)}
        </td>
      ))}
    </tr>
  );
});

/**
 * Focuses a mounted row and makes sure it is in view. The virtualizer's scrollToIndex already aimed there, but
 * a re-render between its scroll and the mount (a row that mounts only because it became the tab stop) could
 * leave a focused row out of sight (seen in Chromium: End focused row 50 with the list still at the top).
 * `nearest` scrolls only when needed, and the scroll area's scroll-padding keeps the row below the sticky
 * header. jsdom has no scrollIntoView, hence the optional call.
 */
function focusInView(element: HTMLTableRowElement) {
  element.focus({ preventScroll: true });
  element.scrollIntoView?.({ block: 'nearest' });
}
