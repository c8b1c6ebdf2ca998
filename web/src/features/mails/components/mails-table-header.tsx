import type { Mail } from '@outbox/contract';
import { flexRender, type Header } from '@tanstack/react-table';
import type { ListSort, SortOrder } from '../api/list-mails';
import { columnOf } from './mails-columns';
import type { useTableLayout } from './use-table-layout';

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

interface HeaderCellProps {
  header: Header<Mail, unknown>;
  sort: ListSort;
  order: SortOrder;
  onSort: (sort: ListSort) => void;
  layout: ReturnType<typeof useTableLayout>;
  isResizing: boolean;
}

/** One column header: sort button (or label), drag-to-move, keyboard move/resize and the resize handle. */
export function HeaderCell({ header, sort, order, onSort, layout, isResizing }: HeaderCellProps) {
  const columnId = header.column.id;
  const column = columnOf(columnId);
  const isFixed = column?.kind === 'fixed';
  const sortKey = column?.kind === 'data' ? column.sortKey : undefined;
  const direction = sortKey === sort ? order : false;
  const ariaSort = sortKey === undefined ? undefined : direction === 'asc' ? 'ascending' : direction === 'desc' ? 'descending' : 'none';
  const label = flexRender(header.column.columnDef.header, header.getContext());
  const classes = [
    'th',
    `th--${columnId}`,
    layout.isDragging(columnId) ? 'is-dragging' : '',
    layout.isDropTarget(columnId) ? 'is-drop-target' : '',
  ]
    .filter(Boolean)
    .join(' ');

  return (
    <th
      scope="col"
      className={classes}
      aria-sort={ariaSort}
      aria-label={column?.kind === 'fixed' ? column.ariaLabel : undefined}
      {...layout.dragHandlers(columnId, isResizing)}
      // Anywhere on a sortable header sorts, not only its text (the resize handle stops its own clicks).
      onClick={sortKey === undefined ? undefined : () => onSort(sortKey)}
    >
      {isFixed ? (
        label
      ) : sortKey !== undefined ? (
        <button
          type="button"
          className="th__sort"
          onKeyDown={(event) => layout.handleHeaderKey(event, columnId)}
          title="Sort. Drag to move; Alt+←/→ moves, Alt+Shift+←/→ resizes"
        >
          <span className="truncate">{label}</span>
          <SortIcon direction={direction} />
        </button>
      ) : (
        <span
          className="th__label truncate"
          tabIndex={0}
          onKeyDown={(event) => layout.handleHeaderKey(event, columnId)}
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
