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
  /** One application's mails: an API key's id, or `none` (mails no key submitted); null: every mail. */
  application: string | null;
  /** Its name, when the view was told it (the Overview's click); shown on the chip, never in the address. */
  applicationName: string | null;
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

/**
 * What the page on screen tells the pager: its row count and its answer's `meta`. `ready`: the answer is the
 * view's own, not the previous page kept on screen while the view's loads (its cursors belong to that page).
 */
export interface PageShown {
  rowCount: number;
  total: number;
  /** More mails match than the server counted (a search or a date range): `total` is a lower bound. */
  totalIsLowerBound: boolean;
  nextCursor: string | null;
  prevCursor: string | null;
  /** The server's cursor of the last page (meta.lastCursor); null where it gives none. */
  lastCursor: string | null;
  ready: boolean;
}

/** The footer's range and which pager buttons work (1-based rows). */
export interface Pager {
  firstRow: number;
  lastRow: number;
  canPrevious: boolean;
  canNext: boolean;
  canLast: boolean;
}

export type ViewAction =
  | { type: 'sort'; sort: ListSort }
  | { type: 'forward'; cursor: string }
  | { type: 'back'; cursor: string | null }
  /** The pager's Next and Previous: forward or back in the query's order, by `fromEnd`. */
  | { type: 'next'; page: PageShown }
  | { type: 'previous'; page: PageShown }
  | { type: 'first' }
  | { type: 'last'; total: number; cursor: string }
  | { type: 'filter'; filters: Partial<MailFilters> };

export const NO_FILTERS: MailFilters = {
  statuses: [],
  q: '',
  receivedFrom: null,
  receivedTo: null,
  application: null,
  applicationName: null,
};

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
    case 'forward':
      return forward(state, action.cursor);
    case 'back':
      return back(state, action.cursor);
    // Counted from the end, page 0 is the last page and the index grows towards the start, in the same order:
    // Next goes back towards page 0 with the shown page's nextCursor, Previous forward with its prevCursor.
    // A cursor of the shown page is taken only when that page is the view's own answer.
    case 'next':
      if (state.fromEnd) return back(state, action.page.ready ? action.page.nextCursor : null);
      return action.page.nextCursor === null ? state : forward(state, action.page.nextCursor);
    case 'previous':
      if (!state.fromEnd) return back(state, action.page.ready ? action.page.prevCursor : null);
      return action.page.prevCursor === null ? state : forward(state, action.page.prevCursor);
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

function forward(state: ViewState, cursor: string): ViewState {
  const cursors = state.cursors.slice(0, state.pageIndex + 1);
  cursors[state.pageIndex + 1] = cursor;
  return { ...state, pageIndex: state.pageIndex + 1, cursors };
}

function back(state: ViewState, cursor: string | null): ViewState {
  if (state.pageIndex === 0) return state;
  const target = state.pageIndex - 1;
  const cursors = state.cursors.slice(0, state.pageIndex);
  // Page 0 is loaded without a cursor (one cache entry for First and Previous); from the end, with lastCursor.
  cursors[target] = target === 0 ? (state.fromEnd ? (state.cursors[0] ?? null) : null) : (cursor ?? state.cursors[target] ?? null);
  return { ...state, pageIndex: target, cursors };
}

/**
 * Where the page shown sits in the whole result, and which pager buttons can act. Counted from the end, page
 * 0 holds the last `rowCount` rows and each page before it 50 more. Next and Last need the view's own answer
 * (a cursor or a total of the previous page would lead elsewhere); Last needs an exact total and the server's lastCursor.
 */
export function pagerOf(state: PagingState, page: PageShown): Pager {
  const { pageIndex, fromEnd, lastPageSize } = state;
  const { rowCount, total, ready, nextCursor, prevCursor } = page;
  const firstRow = fromEnd
    ? Math.max(1, total - (pageIndex === 0 ? rowCount : lastPageSize + PAGE_SIZE * pageIndex) + 1)
    : pageIndex * PAGE_SIZE + 1;
  const lastRow = firstRow + rowCount - 1;
  return {
    firstRow,
    lastRow,
    canPrevious: fromEnd ? ready && prevCursor !== null && firstRow > 1 : pageIndex > 0,
    canNext: fromEnd ? pageIndex > 0 : ready && nextCursor !== null && lastRow < total,
    canLast: ready && !page.totalIsLowerBound && lastRow < total && page.lastCursor !== null,
  };
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
    application: state.filters.application,
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
