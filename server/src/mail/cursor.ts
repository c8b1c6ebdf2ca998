/**
 * Keyset cursors for the mail list: an opaque base64url token holding the sort, the order, the last row's
 * sort value and id, and the direction. A deep page costs what page 1 costs (no OFFSET). A `prev` cursor
 * without a row (value and id null) means "from the far end": the last page (`meta.lastCursor`).
 */
import type { MailSort } from '@outbox/contract';
import { badRequest } from '../errors.js';

export type SortValue = number | string;

export interface Cursor {
  sort: MailSort;
  order: 'asc' | 'desc';
  /** null (with id null, direction prev): start from the far end, i.e. the last page. */
  value: SortValue | null;
  id: number | null;
  /** `next` pages on past the row, `prev` pages back before it. */
  direction: 'next' | 'prev';
}

export function encodeCursor(cursor: Cursor): string {
  const payload = [cursor.sort, cursor.order, cursor.value, cursor.id, cursor.direction];
  return Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
}

export function decodeCursor(token: string, sort: MailSort, order: 'asc' | 'desc'): Cursor {
  const invalid = () =>
    badRequest('invalid_cursor', 'cursor is not one this server issued for this sort and order; start again without cursor');
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(payload) || payload.length !== 5) throw invalid();
  const [cursorSort, cursorOrder, value, id, direction] = payload as unknown[];
  if (cursorSort !== sort || cursorOrder !== order) throw invalid();
  if (direction !== 'next' && direction !== 'prev') throw invalid();
  if (value === null && id === null && direction === 'prev') return { sort, order, value, id, direction };
  if (typeof value !== 'number' && typeof value !== 'string') throw invalid();
  if (typeof id !== 'number' || !Number.isInteger(id)) throw invalid();
  return { sort, order, value, id, direction };
}
