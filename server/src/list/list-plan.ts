/**
 * The mail list's planner (docs/query-plans.md): one table of sorts, the list cursor, and `planList`, a pure
 * function from the request and what is known about its matches to one of four named plans. The plans
 * themselves are the `read…Page` functions of list.repository.ts.
 */
import { LIST_COUNT_CAP, MIN_INDEXED_SEARCH, type MailSort } from '@outbox/contract';
import { decodeCursor, encodeCursor, isText, isWholeNumber, type CursorCheck } from './cursor.js';
import { punctuationKeysOf } from '../store/punctuation-keys.js';
import type { SampleShares } from './search-sample.js';

export type SortValue = number | string;

/**
 * Every sort: its column, the check of a cursor's value for it, whether it is text (PostgreSQL hides a text
 * column from its indexes differently), and the two indexes its pages walk: `(column, id)` and, for a status
 * filter, `(status, column, id)`. Migrations 001–004 and 014 create them.
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
  /**
   * PostgreSQL: the pieces of `search` that the trigram index looks up (chooseIndexKeys), each a `LIKE` of
   * its own; the whole search is then checked on each row the index found. Undefined: the index looks up the
   * whole search.
   */
  indexKeys?: readonly string[] | undefined;
  /**
   * PostgreSQL: a search with punctuation looked up by its spelled punctuation runs in `mail_search_keys`
   * (store/punctuation-keys.ts, choosePunctuationKeys), each a `LIKE` there; the whole search is checked on
   * the rows they find. Undefined: not used.
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
}

export const DEFAULT_LIST_OPTIONS: ListOptions = {
  countCap: LIST_COUNT_CAP,
  walkRows: 5_000,
  candidateRows: 15_000,
  walkMargin: 1,
  candidateWalkFactor: 2,
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

/** Trigrams of a search ANDed in the FTS5 query: at most this many when their frequencies are known. */
const MAX_CHOSEN_TRIGRAMS = 3;
/**
 * A trigram on more than this share of the mails narrows the candidates too little to pay for its doclist.
 * At 1M mails a second trigram on 10 % cost a count 0.2–0.6 ms more; left out, the candidates it would have
 * removed cost a page that reads them all 40–70 ms (`lia.user`: 46,000 candidates through one trigram, 7,800
 * through two). Near the bound, the sample (2,000 mails) decides either way.
 */
const NARROWING_SHARE = 0.1;
/** A word of a search on more than this share of the mails is left out of PostgreSQL's index key. */
const COMMON_WORD_SHARE = 0.05;
/** Without frequencies: every third trigram and the last, at most this many. */
const MAX_SPREAD_TRIGRAMS = 12;

/**
 * The trigrams of a search (3+ characters) that the FTS5 query ANDs (SQLite). Any non-empty subset of the
 * search's trigrams finds a superset of its matches, which the `LIKE` that follows removes, so the choice is
 * about cost alone: FTS5 reads the whole doclist of every trigram it ANDs, and a common one (`exa`, `ple`,
 * `.co` of every address) is most of the index. With `share` (the share of mails holding a trigram, from a
 * sample; search-sample.ts) the rarest is taken, then the next rarest while they hold at most 10 % of the
 * mails, three at most: a full address cost 33–40 ms of FTS5 at 1M mails through every third trigram, and
 * 0.5–1 ms through its three rarest. Without it, every third trigram and the last.
 */
/** Every 3-character piece of a text, in order, repeats included (characters, not UTF-16 units). */
export function trigramsOf(text: string): string[] {
  const chars = Array.from(text);
  return Array.from({ length: Math.max(chars.length - 2, 0) }, (_, start) => chars[start]! + chars[start + 1]! + chars[start + 2]!);
}

export function chooseTrigrams(search: string, share?: (trigram: string) => number): string[] {
  const chars = Array.from(search);
  if (chars.length < 3) return [];
  const at = (start: number) => chars.slice(start, start + 3).join('');
  if (!share) {
    const starts = new Set<number>();
    for (let start = 0; start + 3 <= chars.length; start += 3) starts.add(start);
    starts.add(chars.length - 3);
    return [...new Set([...starts].slice(0, MAX_SPREAD_TRIGRAMS).map(at))];
  }
  const trigrams = [...new Set(trigramsOf(search))];
  const byShare = trigrams.map((trigram, position) => ({ trigram, position, share: share(trigram) }));
  // Stable: among equally rare trigrams, the earlier one.
  byShare.sort((a, b) => a.share - b.share || a.position - b.position);
  const chosen = [byShare[0]!];
  for (const next of byShare.slice(1, MAX_CHOSEN_TRIGRAMS)) if (next.share <= NARROWING_SHARE) chosen.push(next);
  return chosen.map((c) => c.trigram);
}

/** A piece of a search that `pg_trgm` looks up as exactly one trigram: three ASCII letters or digits (which others count as letters depends on the database's locale). */
const PG_TRIGRAM = /^[a-z0-9]{3}$/;
/** A further trigram is added only when it at least halves the sampled mails the chosen ones are on. */
const NARROWING_FACTOR = 0.5;
/** A search on at most this share of the mails is read through the GIN index whatever else the filter holds. */
const RARE_SEARCH_SHARE = 0.005;
/**
 * A search on more, up to MAX_KEYED_SHARE, is keyed only beside statuses holding at most STATUS_SHARE of the
 * mails, which PostgreSQL ANDs with it as bitmaps. Alone, or beside most statuses, its own plan reads the
 * table until it has a page; a key hides the search from the planner's statistics (it is checked as
 * `(search_text || '') like`, guessed at 0.5 %), and the plan reads a whole posting list instead (`lumi`, on
 * 10 % of the mails: a count of 1,001 through `lum` 58–78 ms, the table read in order 9 ms; at 1M mails).
 */
const MAX_KEYED_SHARE = 0.08;
const STATUS_SHARE = 0.2;
/**
 * A search on at least this share of the mails, beside statuses holding at most STATUS_SHARE of them, is kept
 * from the index altogether (no key; checked on the rows the statuses' B-tree finds): its trigrams' posting
 * lists hold most of the index, and since the index holds the statuses too (migration 018) PostgreSQL read
 * them beside the status (`.examp`, on every mail, with Error: 12 ms before 018, 41 with it, 22 kept from
 * it; at 1M). Alone, or beside most statuses, it stays visible to the planner, whose statistics then say
 * that reading the table in order finds a page at once (hidden, the planner guesses it rare: 8 → 42 ms).
 */
const UNINDEXED_SHARE = 0.5;

/**
 * PostgreSQL: the pieces of a search that its trigram index looks up, or undefined for the whole search.
 * The GIN index reads the whole posting list of every trigram of its `LIKE` pattern and ANDs them: a word
 * of 8 letters is 6 lists, `andersen` on 5 % of the mails ~300,000 entries, 16–22 ms at 1M mails. Its rarest
 * trigram alone (`rse`) finds the same 50,727 mails in 8 ms; a full address's rarest two (`n12`, `bjo` of
 * `bjorn.andersen12@shop.example`) find it in 7 ms where its words took 24. So the key is the search's
 * rarest trigram (per the sample), then the next rarest while one at least halves the sampled mails the
 * chosen ones are on, three at most. They are taken when the sample says they find at most twice the
 * search's mails (none, for a search the sample never saw: `757` of `#57573` is on a thousand mails the
 * search is not), and the search is rare, or beside few statuses (above). Otherwise (`lav.v`: `lav` on 4.5 %
 * of the mails, the search on 0.17 %) the key is chosen by words (chooseIndexKey), whose padded trigrams
 * (`av `, ` v`) narrow more. `statusShare`: the share of the mails in the filter's statuses (1 without).
 * No key at all (an empty list) for a search on half the mails or more beside few statuses.
 */
export function chooseIndexKeys(search: string, shares: SampleShares, statusShare = 1): string[] | undefined {
  const whole = shares.text(search);
  if (whole >= UNINDEXED_SHARE && statusShare <= STATUS_SHARE) return [];
  if (whole > MAX_KEYED_SHARE || (whole > RARE_SEARCH_SHARE && statusShare > STATUS_SHARE)) return chooseWordKey(search, shares);
  const pieces = [...new Set(trigramsOf(search))]
    .filter((piece) => PG_TRIGRAM.test(piece))
    .map((piece, position) => ({ piece, position, share: shares.trigram(piece) }))
    // Stable: among equally rare trigrams, the earlier one.
    .sort((a, b) => a.share - b.share || a.position - b.position);
  if (pieces.length === 0) return chooseWordKey(search, shares);
  const chosen = [pieces[0]!.piece];
  let together = pieces[0]!.share;
  for (const next of pieces.slice(1)) {
    if (chosen.length === MAX_CHOSEN_TRIGRAMS || together === 0) break;
    const narrower = shares.together([...chosen, next.piece]);
    if (narrower <= together * NARROWING_FACTOR) {
      chosen.push(next.piece);
      together = narrower;
    }
  }
  if (together > 2 * whole) return chooseWordKey(search, shares);
  return chosen.length === 1 && chosen[0] === search ? undefined : chosen;
}

/**
 * A search with punctuation is looked up through its punctuation keys (punctuationKeysOf) when the rarest of
 * them is on at most this share of the sampled mails, and on at most twice the search's own share. At 1M
 * mails `7/2`, `clav!`, `lav.v`, `n.jensen` and `12@shop` each have a key on exactly their own mails (593 to
 * 6,966), where `pg_trgm` sees only their words (`7` and `2`, `clav`, `n` and `jensen`) and checked up to
 * 92,000 rows (82–227 ms). A search whose key is on many more mails than itself keeps its words, which are
 * then the rarer part: `cher19@` (561 mails) has the key `19@` (13,894), and its word `cher19` is looked up
 * well already. A common one (`.example`, on every mail) too.
 */
const PUNCTUATION_KEY_SHARE = 0.02;
const PUNCTUATION_KEY_SPREAD = 2;

/**
 * PostgreSQL: the punctuation keys that look `search` up in `mail_search_keys`, or undefined when its words
 * do it better (no key of three characters, or none rare enough by the sample).
 */
export function choosePunctuationKeys(search: string, shares: SampleShares): string[] | undefined {
  const keys = punctuationKeysOf(search);
  if (keys.length === 0) return undefined;
  const rarest = Math.min(...keys.map(({ raw }) => shares.text(raw)));
  if (rarest > PUNCTUATION_KEY_SHARE || rarest > PUNCTUATION_KEY_SPREAD * shares.text(search)) return undefined;
  return keys.map(({ key }) => key);
}

function chooseWordKey(search: string, shares: SampleShares): string[] | undefined {
  const key = chooseIndexKey(search, shares.text);
  return key === undefined ? undefined : [key];
}

/**
 * PostgreSQL, when the search's trigrams do not single it out (chooseIndexKeys): the part of a search that
 * its trigram index looks up, or undefined for the whole. `pg_trgm`
 * makes trigrams of the pattern's words, and the GIN index reads the whole posting list of each: a full
 * address's `example`, `shop` and `com` are on most mails. `user.weber10@mail.example.net` took 136 ms at
 * 1M mails; through `weber10@` 4 ms, with the whole search checked on the 621 rows it found. The key
 * is the search without the common words (3+ characters on more than 5 % of the mails, `share` from a
 * sample) at either end, through the separator after its last word. It must hold a rare word (3+
 * characters, at most 5 %): `12@shop` through `12@` found 92,000 rows to check, the whole 27,000. Short
 * words stay (`orn.us` through `orn.`: 129 → 262 ms, more rows to check). Nothing to leave out: the whole search.
 */
export function chooseIndexKey(search: string, share: (text: string) => number): string | undefined {
  const words = [...search.matchAll(/[\p{L}\p{N}]+/gu)].map((match) => {
    const long = Array.from(match[0]).length >= 3;
    const common = long && share(match[0]) > COMMON_WORD_SHARE;
    return { start: match.index, rare: long && !common, common };
  });
  // A short word stays: its padded trigrams (` v` of `lav.v`) narrow the rows more than they cost.
  const first = words.findIndex((word) => !word.common);
  const last = words.findLastIndex((word) => !word.common);
  if (first === -1 || !words.slice(first, last + 1).some((word) => word.rare)) return undefined;
  const key = search.slice(words[first]!.start, last + 1 < words.length ? words[last + 1]!.start : search.length);
  return key.length < search.length ? key : undefined;
}

/**
 * The share of the entries a walk passes that match (planList's `walkShare`), as if matches were spread evenly
 * along the sort: the walk's seeks hold the statuses (and a date range in received order, or from its start in
 * ascending last-update order); it checks the rest.
 * `matchesOfEveryTerm` (a count through the trigrams) covers every term at once; otherwise a search's share is
 * its candidates' (SQLite's probe) or the search sample's, unknown without either (until the first sample is
 * read), times the date range's share when the walk checks it.
 */
export function estimateWalkShare(
  filter: ListFilter,
  sort: MailSort,
  ascending: boolean,
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
  // Read upwards in last-update order, a range without an end starts the seek at `from` (readSeek), and the mails
  // it passes are mostly those received since: as if the seek held the range.
  const seekHoldsRange =
    sort === 'receivedDate' || (sort === 'lastUpdate' && ascending && filter.receivedFrom !== undefined && filter.receivedTo === undefined);
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
