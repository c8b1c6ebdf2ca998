/**
 * The mail list's planner (docs/query-plans.md): `planList`, a pure function from the request and what is known
 * about its matches to one of four named plans, and what it is given: where a count reads its matches
 * (`chooseMatchSource`) and the share of a walk's entries that match (`estimateWalkShare`). The plans themselves
 * are the `read…Page` functions of list.repository.ts; the sort table is list-sorts.ts, the cursor
 * list-cursor.ts, the search's index keys search-keys.ts.
 */
import { LIST_COUNT_CAP, MIN_INDEXED_SEARCH, type MailSort } from '@outbox/contract';

export interface ListFilter {
  /** Distinct status codes; undefined: every status. */
  statuses?: number[] | undefined;
  /** Lower-cased text, matched as a substring of `search_text`. */
  search?: string | undefined;
  /**
   * PostgreSQL: the search is looked up in `mail_search` (migration 031) through its trigram indexes, by
   * `indexKeys` or `punctuationKeys`; otherwise (and on SQLite) it is checked on each row read.
   */
  searchLookup?: boolean | undefined;
  /**
   * PostgreSQL, with `searchLookup`: the pieces of `search` that the trigram index looks up (chooseIndexKeys),
   * each a `LIKE` of its own; the whole search is then checked on each row the index found. Undefined: the
   * index looks up the whole search; empty (and no punctuation keys): no lookup, the search is checked on rows.
   */
  indexKeys?: readonly string[] | undefined;
  /**
   * PostgreSQL, with `searchLookup`: a search with punctuation looked up by its spelled punctuation runs in
   * `mail_search.keys` (store/punctuation-keys.ts, choosePunctuationKeys), each a `LIKE` there; the whole search
   * is checked on the rows they find. Undefined: not used.
   */
  punctuationKeys?: readonly string[] | undefined;
  /** Received at or after (ms, inclusive) and before (ms, exclusive). */
  receivedFrom?: number | undefined;
  receivedTo?: number | undefined;
  /**
   * The mails of one application (an API key's id), or null: those no API key submitted. Read by
   * `readApplicationPage` (list.repository.ts), never by the planner's plans; undefined: every mail.
   */
  apiKeyId?: number | null | undefined;
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
  /**
   * A walk is skipped for `sort` when it is expected to pass more than `walkMargin` times the entries its
   * bound lets it (`Infinity`: always walk, as a test of the walk's own paths does).
   */
  walkMargin: number;
  /**
   * SQLite: a walk through candidates is taken only when the entries it is expected to pass are fewer than
   * this many times the candidates (which `sort` would read instead). At 1M mails an entry checked against
   * the candidates cost ~1.3 µs and a candidate read and checked by `sort` ~2.5 µs: `clav!` (~2,000
   * candidates, ~34,000 entries) took 49 ms walked and 7 ms sorted, `kowalski7` (5,747; ~8,900) 11.4 and 14.3.
   * `Infinity`: whenever the candidates are few enough (a test of the walk's own paths).
   */
  candidateWalkFactor: number;
  /**
   * PostgreSQL: the plan `sort` reads every match of the other terms sorted by the engine, and looks the search up
   * first (its ids from `mail_search`, then their rows by key) only when the search is on at most this share of the
   * mails (isLookedUpFirst); a commoner one is checked on each row the other terms find. Looked up first, `ample`
   * (every mail) in the last hour read 1M ids for 1,500 mails (1.9 s at 1M); checked on the rows, `illin` (10 %)
   * in the last 14 days took 0.3 s where its ids first took 0.5. `0`: never (always checked on the rows).
   */
  lookUpFirstShare: number;
}

export const DEFAULT_LIST_OPTIONS: ListOptions = {
  countCap: LIST_COUNT_CAP,
  walkRows: 5_000,
  candidateRows: 15_000,
  walkMargin: 1,
  candidateWalkFactor: 2,
  lookUpFirstShare: 0.02,
};

/**
 * What the planner knows before reading a page: the matches counted up to `countCap + 1`, when there is a
 * filter to count; and (SQLite, a search counted through its trigram index) how many mails the search is
 * expected on, from how far back among the ids its first `countCap + 1` matches reached.
 */
export interface ListStats {
  matches?: number | undefined;
  expectedMatches?: number | undefined;
  /**
   * The search's trigram candidates, estimated (SQLite, with statuses or a date range: matchStatsOf's probe).
   * A walk through candidates reads all of them, whatever the other terms keep: a word on 5 % of the mails
   * with a status of 6 % has ~3,000 matches but ~50,000 candidates. Undefined: as many as `expectedMatches`.
   */
  candidates?: number | undefined;
  /**
   * The share of the rows a walk passes that it keeps: the terms its seeks do not hold (a search, a date range
   * outside received order), estimated as if matches were spread evenly (estimateWalkShare); undefined: not
   * known (a search on PostgreSQL before the first search sample is read).
   */
  walkShare?: number | undefined;
  /** Rows the page needs (limit + 1); undefined: every match (a request without `limit`). */
  pageRows?: number | undefined;
  /**
   * The chosen statuses' mails over those of the largest of them (1 without a status filter, or with one
   * status). A walk of several statuses knows its page up to the nearest frontier, the largest status's: its
   * seeks together pass about `walkRows × seekSpread` entries of the order before that frontier.
   */
  seekSpread?: number | undefined;
}

/**
 * Where a read of the matches starts (the count's first `countCap + 1`, or every match for the plan `sort`):
 * - `trigrams` (SQLite, 3+ characters): the search's trigram candidates newest first, each row checked;
 * - `seek` (SQLite): the chosen statuses' or the date range's index (SQLite picks between them by its
 *   statistics), each row checked against the other terms; also every filter without a 3+ character search;
 * - `engine`: PostgreSQL's choice (it has statistics of words, dates and statuses, and ANDs their indexes).
 */
export type MatchSource = 'trigrams' | 'seek' | 'engine';

/** What the choice knows: rows per the counters, the date range's rows and the search's candidates, estimated. */
export interface MatchStats {
  /** Mails in the store, from the counters. */
  totalRows: number;
  /** Mails in the chosen statuses (every mail without a status filter), from the counters. */
  statusRows: number;
  /** Mails received within the date range, estimated from the span of all receipt times; undefined: no range. */
  rangeRows?: number | undefined;
  /** How many trigram candidates the search has, estimated from a probe of the first `countCap + 1`; undefined: not probed. */
  candidates?: number | undefined;
}

/**
 * A row read by a seek costs about twice a trigram candidate's: the seek runs the search's LIKE on every row,
 * and its rows come in the index's order, scattered over the table, where the candidates come newest id
 * first and most stop at the status check. Measured at 1M on SQLite (CPU per request, same minutes):
 * `q=shipped status=2` 117 → 68 ms through the seek (3.2 times fewer rows), but `q=shipped status=4` 58 →
 * 84 ms (1.07 times fewer rows) and its `sort` page 207 → 329 ms.
 */
const SEEK_ROW_COST = 2;

/**
 * The source that reads fewer rows (a seek's weighted by `SEEK_ROW_COST`) before it has `wanted` matches (`Infinity`: every match). Through the
 * trigram candidates, a share `statuses × range` of them passes the other terms; through a seek of the
 * statuses and the range (`(status, received_at, id)` holds both) or of the one given, a share `candidates`
 * holds the word. Either stops
 * at its end. A common word with a rare status (`q=shipped status=2`: 66,000 candidates, 20,000 mails of the
 * status) reads ~15,000 rows through the status instead of ~50,000 candidates; a common word in the last hour
 * reads that hour's ~1,500 mails instead of every candidate; a rare word keeps its few candidates.
 */
export function chooseMatchSource(filter: ListFilter, engine: 'sqlite' | 'postgres', stats: MatchStats, wanted: number): MatchSource {
  if (engine !== 'sqlite') return 'engine';
  const hasRange = stats.rangeRows !== undefined;
  if (!isIndexedSearch(filter.search)) return 'seek';
  if ((filter.statuses === undefined && !hasRange) || stats.candidates === undefined) return 'trigrams';
  const total = Math.max(stats.totalRows, 1);
  const statusShare = filter.statuses === undefined ? 1 : stats.statusRows / total;
  const rangeShare = hasRange ? Math.min(stats.rangeRows! / total, 1) : 1;
  const candidateShare = stats.candidates / total;
  // Statuses with a range seek `(status, received_at, id)`: only the mails in both. Otherwise the narrower one.
  const seekShare = filter.statuses !== undefined && hasRange ? statusShare * rangeShare : Math.min(statusShare, rangeShare);
  if (seekShare === 0) return 'seek';
  const throughTrigrams = Math.min(stats.candidates, wanted / (statusShare * rangeShare));
  const throughSeek = SEEK_ROW_COST * Math.min(seekShare * total, (wanted * seekShare) / (statusShare * rangeShare * candidateShare));
  return throughSeek < throughTrigrams ? 'seek' : 'trigrams';
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
  /**
   * Every match through the search's or the date's own index, sorted by the engine: when a walk found no page
   * within its bound, or is expected to find none, or the request wants every match (no `limit`).
   */
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
  // Every match: a bounded walk would stop at its bound, so the matches are read through their own index.
  if (stats.pageRows === undefined) return bound === undefined ? { name: 'walk', bound, throughCandidates: false } : { name: 'sort' };
  const throughCandidates =
    stats.expectedMatches !== undefined &&
    (stats.candidates ?? stats.expectedMatches) <= options.candidateRows &&
    (stats.walkShare === undefined || stats.pageRows < stats.walkShare * options.candidateWalkFactor * stats.expectedMatches);
  // A walk expected to pass more entries than its bound before it has a page ends in `sort` after paying for
  // them (a date range of one hour sorted by To: 5,000 rows read per status for nothing). Through candidates,
  // the bound counts the candidates read, not the entries passed: the estimate does not apply.
  const reach = (bound ?? Infinity) * (stats.seekSpread ?? 1) * options.walkMargin;
  if (!throughCandidates && stats.walkShare !== undefined && stats.pageRows > stats.walkShare * reach) return { name: 'sort' };
  return { name: 'walk', bound, throughCandidates };
}

/**
 * The share of the entries a walk passes that match (planList's `walkShare`), as if matches were spread evenly
 * along the sort: the walk's seeks hold the statuses (and a date range in received order, or one from a start
 * without an end in last-update order); it checks the rest.
 * `matchesOfEveryTerm` (a count through the trigrams) covers every term at once; otherwise a search's share is
 * its candidates' (SQLite's probe) or the search sample's, unknown without either (until the first sample is
 * read), times the date range's share when the walk checks it.
 */
export function estimateWalkShare(
  filter: ListFilter,
  sort: MailSort,
  known: {
    statusRows: number;
    totalRows: number;
    rangeRows?: number | undefined;
    candidates?: number | undefined;
    matchesOfEveryTerm?: number | undefined;
    /** The share of the search sample's mails holding a text (search-sample.ts), asked only when needed. */
    sampledShareOf?: ((text: string) => number) | undefined;
    /** Matches the count found (of every term): the search is on at least that many mails. */
    counted?: number | undefined;
  },
): number | undefined {
  const total = Math.max(known.totalRows, 1);
  const rangeShare = known.rangeRows === undefined ? 1 : Math.min(known.rangeRows / total, 1);
  // In last-update order a range without an end bounds the seek at `from` (readSeek): read upwards it starts there,
  // downwards it ends there. Either way the entries it passes are the mails updated since `from`: those received
  // since (a mail is updated at or after its receipt, mostly soon after) and the older ones updated since, fewer in
  // a store that keeps up. As if the seek held the range: at 1M, `rders` in the last 24 hours by last update,
  // newest first, took 288–540 ms sorted against 90–136 walked, where the range's share made the walk look hopeless.
  const seekHoldsRange =
    sort === 'receivedDate' || (sort === 'lastUpdate' && filter.receivedFrom !== undefined && filter.receivedTo === undefined);
  if (known.matchesOfEveryTerm !== undefined) {
    const seekRows = known.statusRows * (seekHoldsRange ? rangeShare : 1);
    return Math.min(known.matchesOfEveryTerm / Math.max(seekRows, 1), 1);
  }
  // A search's share: its trigram candidates (SQLite's probe), else the sample's share of mails holding it (at
  // least what the count found: a search on 1 mail in 2,000 may be missing from the sample).
  const sampled = (search: string) =>
    known.sampledShareOf === undefined ? undefined : Math.max(known.sampledShareOf(search), (known.counted ?? 0) / total);
  const searchShare =
    filter.search === undefined ? 1 : known.candidates !== undefined ? Math.min(known.candidates / total, 1) : sampled(filter.search);
  if (searchShare === undefined) return undefined;
  return searchShare * (seekHoldsRange ? 1 : rangeShare);
}
