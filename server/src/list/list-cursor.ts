/**
 * The mail list's cursor: the sort and order it was issued for, the last row's position and the direction, in
 * the one cursor format of every keyset list (cursor.ts). Its value is checked against its sort's column
 * (list-sorts.ts), so a forged cursor is refused before it reaches the store.
 */
import type { MailSort } from '@outbox/contract';
import { decodeCursor, encodeCursor, isWholeNumber, type CursorCheck } from './cursor.js';
import { LIST_SORTS, type Position, type SortValue } from './list-sorts.js';

/** `next` pages on past the position, `prev` back before it; `prev` without a position is the last page. */
export interface ListCursor {
  position: Position | null;
  direction: 'next' | 'prev';
}

export function encodeListCursor(sort: MailSort, order: 'asc' | 'desc', cursor: ListCursor): string {
  return encodeCursor([sort, order, cursor.position?.value ?? null, cursor.position?.id ?? null, cursor.direction]);
}

/** 400 `invalid_cursor` (thrown by the caller) for anything but a cursor issued for this sort and order. */
export function decodeListCursor(token: string, sort: MailSort, order: 'asc' | 'desc'): ListCursor | undefined {
  const orNull =
    (check: CursorCheck): CursorCheck =>
    (v) =>
      v === null || check(v);
  const values = decodeCursor(token, [
    (v) => v === sort,
    (v) => v === order,
    orNull(LIST_SORTS[sort].value),
    orNull(isWholeNumber(1)),
    (v) => v === 'next' || v === 'prev',
  ]);
  if (!values) return undefined;
  const [, , value, id, direction] = values as [unknown, unknown, SortValue | null, number | null, 'next' | 'prev'];
  if (value === null && id === null) return direction === 'prev' ? { position: null, direction } : undefined;
  if (value === null || id === null) return undefined;
  return { position: { value, id }, direction };
}
