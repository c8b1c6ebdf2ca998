/**
 * The mail list's planner (docs/query-plans.md): one table of sorts, the list cursor, and `planList`, a pure
 * function from the request and what is known about its matches to one of four named plans. The plans
 * themselves are the `read…Page` functions of mail.repository.ts.
 */
import { LIST_COUNT_CAP, MIN_INDEXED_SEARCH, type MailSort } from '@outbox/contract';
import { decodeCursor, encodeCursor, isText, isWholeNumber, type CursorCheck } from './cursor.js';

export type SortValue = number | string;

/**
 * Every sort: its column, the check of a cursor's value for it, whether it is text (PostgreSQL hides a text
 * column from its indexes differently), and the two indexes its pages walk: `(column, id)` and, for a status
 * filter, `(status, column, id)`. Migrations 001–004 and 010 create them.
 */
export const LIST_SORTS = {
  receivedDate: {
    column: 'received_at',
    value: isWholeNumber(0),
    text: false,
    index: 'mails_received_idx',
    statusIndex: 'mails_status_received_idx',
  },
  lastUpdate: {
    column: 'last_update_at',
    value: isWholeNumber(0),
    text: false,
    index: 'mails_last_update_idx',
    statusIndex: 'mails_status_last_update_idx',
  },
  providerSentDate: {
    column: 'provider_sent_at',
    value: isWholeNumber(0),
    text: false,
    index: 'mails_provider_sent_idx',
    statusIndex: 'mails_status_provider_sent_idx',
  },
  subject: { column: 'subject', value: isText, text: true, index: 'mails_subject_idx', statusIndex: 'mails_status_subject_idx' },
  status: { column: 'status', value: isWholeNumber(0, 5), text: false, index: 'mails_status_idx', statusIndex: 'mails_status_idx' },
  from: { column: 'from_mail', value: isText, text: true, index: 'mails_from_idx', statusIndex: 'mails_status_from_idx' },
  to: { column: 'first_to_mail', value: isText, text: true, index: 'mails_first_to_idx', statusIndex: 'mails_status_first_to_idx' },
} as const satisfies Record<MailSort, { column: string; value: CursorCheck; text: boolean; index: string; statusIndex: string }>;

export type SortColumn = (typeof LIST_SORTS)[MailSort]['column'];

/** A row's place in a sort: its value, then its id (ids break ties). */
export interface Position {
  value: SortValue;
  id: number;
}

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

export interface ListFilter {
  /** Distinct status codes; undefined: every status. */
  statuses?: number[] | undefined;
  /** Lower-cased text, matched as a substring of `search_text`. */
  search?: string | undefined;
  /** Received at or after (ms, inclusive) and before (ms, exclusive). */
  receivedFrom?: number | undefined;
  receivedTo?: number | undefined;
}

export interface ListOptions {
  /** Matches counted exactly up to this many; beyond, the total is this with `totalIsLowerBound`. */
  countCap: number;
  /** A walk of the sort's index looks at this many entries per status at most before the plan `sort` takes over. */
  walkRows: number;
  /**
   * SQLite: a search expected on at most this many mails walks through its trigram candidates (each index
   * entry's id checked against them before its row is read). Collecting a candidate costs ~1.4 µs, reading a
   * row to check it ~6 µs: the two meet near 15,000 at 1M mails.
   */
  candidateRows: number;
}

export const DEFAULT_LIST_OPTIONS: ListOptions = { countCap: LIST_COUNT_CAP, walkRows: 5_000, candidateRows: 15_000 };

/**
 * What the planner knows before reading a page: the matches counted up to `countCap + 1`, when there is a
 * filter to count; and (SQLite, a search counted through its trigram index) how many mails the search is
 * expected on, from how far back among the ids its first `countCap + 1` matches reached.
 */
export interface ListStats {
  matches?: number | undefined;
  expectedMatches?: number | undefined;
}

/**
 * Where the count reads the matches of a filter with statuses and a search (the ids of up to `countCap + 1`):
 * - `statuses`: the chosen statuses' rows in their index, each checked against the other terms;
 * - `trigrams` (SQLite, 3+ characters): the search's trigram candidates newest first, each row checked;
 * - `engine`: one statement, the engine's choice (PostgreSQL has statistics of words, dates and statuses).
 */
export type CountSource = 'statuses' | 'trigrams' | 'engine';

/** What the count's choice knows: rows per the counters, and (SQLite) the search's trigram candidates, estimated. */
export interface CountStats {
  /** Mails in the chosen statuses (every mail without a status filter), from the counters. */
  statusRows: number;
  /** Mails in the store, from the counters. */
  totalRows: number;
  /** How many trigram candidates the search has, estimated from a probe of the first `countCap + 1`; undefined: not probed. */
  candidates?: number | undefined;
}

/**
 * The cheapest source for the count, by the rows each would read before it has `countCap + 1` matches. Through
 * the trigram candidates, one in `totalRows / statusRows` passes the statuses; through the statuses, one in
 * `totalRows / candidates` holds the word. Either stops at its end. A common word with a rare status
 * (`q=shipped status=2`: 66,000 candidates, 20,000 mails of the status) reads ~15,000 rows through the status
 * instead of ~50,000 candidates; a rare word with the same status reads its few candidates.
 */
export function chooseCountSource(filter: ListFilter, engine: 'sqlite' | 'postgres', stats: CountStats, options: ListOptions): CountSource {
  const wanted = options.countCap + 1;
  // Statuses holding no more mails than the count reads are the quickest way to their matches.
  if (filter.statuses !== undefined && stats.statusRows <= options.countCap) return 'statuses';
  if (engine !== 'sqlite' || !isIndexedSearch(filter.search)) return 'engine';
  if (filter.statuses === undefined || stats.candidates === undefined) return 'trigrams';
  const throughTrigrams = Math.min(stats.candidates, (wanted * stats.totalRows) / Math.max(stats.statusRows, 1));
  const throughStatuses = Math.min(stats.statusRows, (wanted * stats.totalRows) / Math.max(stats.candidates, 1));
  return throughStatuses < throughTrigrams ? 'statuses' : 'trigrams';
}

export type ListPlan =
  /** The sort's index (one seek per chosen status, merged): no term but statuses, or a date range in received order. */
  | { name: 'index' }
  /** At most `countCap` matches, their ids known from the count: read those and sort them. */
  | { name: 'gather' }
  /**
   * More: walk the sort's index checking each row, at most `bound` rows per status; `sort` when that finds no
   * page. `throughCandidates`: only the search's trigram candidates are read (a word of middling frequency).
   */
  | { name: 'walk'; bound: number | undefined; throughCandidates: boolean }
  /** Every match through the search's or the date's own index, sorted by the engine. */
  | { name: 'sort' };

export const isIndexedSearch = (search: string | undefined): search is string =>
  search !== undefined && Array.from(search).length >= MIN_INDEXED_SEARCH;

/** Whether the filter holds a term the status counters do not count: its total is counted up to the cap. */
export function isCounted(filter: ListFilter): boolean {
  return filter.search !== undefined || filter.receivedFrom !== undefined || filter.receivedTo !== undefined;
}

export function planList(filter: ListFilter, sort: MailSort, stats: ListStats, options: ListOptions): ListPlan {
  // A date range in received order is a range of the sort's own index: seeking it is exact at any size.
  if (filter.search === undefined && (sort === 'receivedDate' || !isCounted(filter))) return { name: 'index' };
  if (stats.matches !== undefined && stats.matches <= options.countCap) return { name: 'gather' };
  // 1–2 characters have no trigram index to read the matches through: the walk goes on to the end if need be.
  const bound = filter.search === undefined || isIndexedSearch(filter.search) ? options.walkRows : undefined;
  return { name: 'walk', bound, throughCandidates: stats.expectedMatches !== undefined && stats.expectedMatches <= options.candidateRows };
}
