import type { MailListParams, ListSort, SortOrder } from '../api/list-mails';
import { PAGE_SIZE } from '../api/list-mails';

/**
 * What the list shows: the filters, the sort and the page. Everything here ends up in the list query key and
 * in the address bar (view-url.ts), so a view can be shared; the token never does.
 *
 * Paging is keyset: `cursors[i]` is the cursor that loads page i (page 0 has none). "Forward" stores
 * meta.nextCursor of the page shown, "back" takes its meta.prevCursor. Last is the server's meta.lastCursor (a
 * keyset page from the far end, never an OFFSET): with `fromEnd`, page 0 is the last page, read with that
 * cursor and `lastPageSize` rows (so the pages before it line up with the 50-row pages from the start), and
 * "forward" steps towards the start with each page's meta.prevCursor. The footer maps Next/Previous onto
 * forward/back by `fromEnd`.
 */
export interface MailFilters {
  /** Status codes shown; empty: all. */
  statuses: number[];
  q: string;
  /** Local calendar days `YYYY-MM-DD`, both inclusive; null: open. */
  receivedFrom: string | null;
  receivedTo: string | null;
}

export interface PagingState {
  sort: ListSort;
  order: SortOrder;
  pageIndex: number;
  cursors: (string | null)[];
  fromEnd: boolean;
  lastPageSize: number;
}

export interface ViewState extends PagingState {
  filters: MailFilters;
}

export type ViewAction =
  | { type: 'sort'; sort: ListSort }
  | { type: 'forward'; cursor: string }
  | { type: 'back'; cursor: string | null }
  | { type: 'first' }
  | { type: 'last'; total: number; cursor: string }
  | { type: 'filter'; filters: Partial<MailFilters> };

export const NO_FILTERS: MailFilters = { statuses: [], q: '', receivedFrom: null, receivedTo: null };

export const INITIAL_VIEW: ViewState = {
  sort: 'receivedDate',
  order: 'desc',
  pageIndex: 0,
  cursors: [null],
  fromEnd: false,
  lastPageSize: PAGE_SIZE,
  filters: NO_FILTERS,
};

const FIRST_PAGE = { pageIndex: 0, cursors: [null], fromEnd: false, lastPageSize: PAGE_SIZE } as const;

/** Dates read newest first; names and statuses read A→Z / low→high on the first click. */
function firstOrderOf(sort: ListSort): SortOrder {
  return sort === 'from' || sort === 'to' || sort === 'subject' || sort === 'status' ? 'asc' : 'desc';
}

export function viewReducer(state: ViewState, action: ViewAction): ViewState {
  switch (action.type) {
    case 'sort': {
      const order = state.sort === action.sort ? (state.order === 'asc' ? 'desc' : 'asc') : firstOrderOf(action.sort);
      // A sort change returns to the first page: cursors of another order mean nothing.
      return { ...state, sort: action.sort, order, ...FIRST_PAGE, cursors: [null] };
    }
    case 'forward': {
      const cursors = state.cursors.slice(0, state.pageIndex + 1);
      cursors[state.pageIndex + 1] = action.cursor;
      return { ...state, pageIndex: state.pageIndex + 1, cursors };
    }
    case 'back': {
      if (state.pageIndex === 0) return state;
      const target = state.pageIndex - 1;
      const cursors = state.cursors.slice(0, state.pageIndex);
      // Page 0 is loaded without a cursor (one cache entry for First and Previous); from the end, with lastCursor.
      cursors[target] =
        target === 0 ? (state.fromEnd ? (state.cursors[0] ?? null) : null) : (action.cursor ?? state.cursors[target] ?? null);
      return { ...state, pageIndex: target, cursors };
    }
    case 'first':
      return state.pageIndex === 0 && !state.fromEnd ? state : { ...state, ...FIRST_PAGE, cursors: [null] };
    case 'last': {
      const remainder = action.total % PAGE_SIZE;
      return { ...state, pageIndex: 0, cursors: [action.cursor], fromEnd: true, lastPageSize: remainder === 0 ? PAGE_SIZE : remainder };
    }
    case 'filter':
      // Any filter change returns to page 1 (the old cursors belong to another result).
      return { ...state, filters: { ...state.filters, ...action.filters }, ...FIRST_PAGE, cursors: [null] };
  }
}

/** The list call of a view. */
export function listParamsOf(state: ViewState): MailListParams {
  return {
    sort: state.sort,
    order: state.order,
    cursor: state.cursors[state.pageIndex] ?? null,
    limit: state.fromEnd && state.pageIndex === 0 ? state.lastPageSize : PAGE_SIZE,
    statuses: state.filters.statuses,
    q: state.filters.q.trim(),
    receivedFrom: startOfDay(state.filters.receivedFrom),
    receivedTo: endOfDay(state.filters.receivedTo),
  };
}

/** The first instant of a local calendar day, as an ISO instant (the operator thinks in local days). */
function startOfDay(day: string | null): string | null {
  const date = parseDay(day);
  return date ? date.toISOString() : null;
}

/** The start of the day after `day`: the server's `receivedTo` is exclusive, so the whole last day is in. */
function endOfDay(day: string | null): string | null {
  const date = parseDay(day);
  if (!date) return null;
  date.setDate(date.getDate() + 1);
  return date.toISOString();
}

function parseDay(day: string | null): Date | null {
  const match = day ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(day) : null;
  if (!match) return null;
  const date = new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  return Number.isNaN(date.getTime()) ? null : date;
}
