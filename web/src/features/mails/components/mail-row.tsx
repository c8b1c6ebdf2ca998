import { memo, type CSSProperties, type KeyboardEvent, type MouseEvent, type PointerEvent, type RefCallback } from 'react';
import type { Mail } from '@outbox/contract';
import type { MailColumn, RowCellProps } from './mails-columns';

/**
 * What a row does when used, one object for every row (built once by MailsTable): its identity never changes,
 * so a memoized row re-renders only when its own props do.
 */
export interface RowHandlers {
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

/** One row of the mails table: its cells drawn from the columns' `cell`, placed in the virtual body by its index. */
export const MailRow = memo(function MailRow({
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
