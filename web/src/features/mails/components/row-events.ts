import type { KeyboardEvent, MouseEvent, PointerEvent } from 'react';
import type { Mail } from '@outbox/contract';

/** What a row's pointer and keyboard events act on: the page's rows and what the table does with one. */
export interface RowEventContext {
  mails: readonly Mail[];
  /** Moves focus to the row at this index of the page (mounting it if it is out of view). */
  focusRowAt: (index: number) => void;
  toggleRow: (rowId: string) => void;
  onOpen: (id: number) => void;
  onPress?: (id: number) => void;
}

/** A click on the row's button or checkbox acts on the mail or the selection, and opens nothing. */
function isOnControl(event: { target: EventTarget }) {
  return (event.target as HTMLElement).closest('button, a, input') !== null;
}

export function handleRowPointerDown(context: RowEventContext, event: PointerEvent<HTMLTableRowElement>, rowId: string) {
  if (event.button === 0 && !isOnControl(event)) context.onPress?.(Number(rowId));
}

export function handleRowClick(context: RowEventContext, event: MouseEvent<HTMLTableRowElement>, rowId: string) {
  if (isOnControl(event)) return;
  context.toggleRow(rowId);
  context.onOpen(Number(rowId));
}

/** PageUp and PageDown move this many rows. */
const PAGE_STEP = 10;

/**
 * The body is one tab stop (a grid with roving focus): ↑/↓, Home/End and PageUp/PageDown move between rows,
 * → goes to the row's button and ← back, Enter opens the detail, Space selects.
 */
export function handleRowKeyDown(context: RowEventContext, event: KeyboardEvent<HTMLTableRowElement>, rowId: string) {
  const { mails } = context;
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
    PageDown: index + PAGE_STEP,
    PageUp: index - PAGE_STEP,
  };
  const target = moveTo[event.key];
  if (target !== undefined) {
    event.preventDefault();
    context.focusRowAt(Math.max(0, Math.min(mails.length - 1, target)));
  } else if (event.key === 'ArrowRight') {
    event.preventDefault();
    rowElement.querySelector<HTMLElement>('button')?.focus();
  } else if (event.key === ' ' || event.key === 'Spacebar') {
    event.preventDefault();
    context.toggleRow(rowId);
  } else if (event.key === 'Enter') {
    event.preventDefault();
    context.onOpen(Number(rowId));
  }
}
