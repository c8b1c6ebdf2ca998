/**
 * Keyset cursors for the mail list: an opaque base64url token holding the sort, the order, the last row's
 * sort value and id, and the direction. A deep page costs what page 1 costs (no OFFSET).
 *
 * A cursor is client input like any other (issue 11, item 5): forged ones with a string where an instant
 * belongs, an id of 1e300 or a float reached PostgreSQL and answered 500. Every field is checked against the
 * type of its sort's column here, so what reaches the store is a value that column can hold. Cursors are not
 * signed: a key per process would break paging behind a load balancer, and a forged but well-typed cursor
 * only starts a page where its sender chose, in a list that sender may read anyway.
 * A `prev` cursor without a row (value and id null) means "from the far end": the last page (`meta.lastCursor`).
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
  if (!isSortValue(sort, value)) throw invalid();
  if (!isSafeInteger(id, 1)) throw invalid();
  return { sort, order, value, id, direction };
}

/** Whole numbers a JS number holds exactly (ids and millisecond instants of the store fit). */
function isSafeInteger(value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
}

/** What the sort's column holds: instants (0 = not sent yet) and the status code are integers, the rest text. */
function isSortValue(sort: MailSort, value: unknown): value is SortValue {
  switch (sort) {
    case 'receivedDate':
    case 'lastUpdate':
    case 'providerSentDate':
      return isSafeInteger(value, 0);
    case 'status':
      return isSafeInteger(value, 0, 5);
    case 'subject':
    case 'from':
    case 'to':
      return typeof value === 'string' && !value.includes('\u0000');
  }
}
