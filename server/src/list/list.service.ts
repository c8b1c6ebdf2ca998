/**
 * The list of mails (docs/query-plans.md): one page for a filter, a sort and a cursor. The counters give the
 * total of a status filter; any other term is counted up to the cap (list-matches.repository.ts), and `planList`
 * (list-plan.ts) chooses the plan from that count; list.repository.ts reads. Rows never leave this module:
 * callers get the contract's `Mail`.
 */
import { STATUSES, type Mail, type MailListMeta, type MailSort } from '@outbox/contract';
import { badRequest, notFound } from '../errors.js';
import { findApplicationName } from '../statistics/statistics.repository.js';
import type { Store } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { getStatusCounts } from '../mail/mail.repository.js';
import { withLeases } from '../mail/leases.js';
import {
  chooseMatchSource,
  DEFAULT_LIST_OPTIONS,
  estimateWalkShare,
  isCounted,
  isIndexedSearch,
  planList,
  type MatchSource,
  type MatchStats,
  type ListFilter,
  type ListOptions,
  type ListPlan,
} from './list-plan.js';
import { decodeListCursor, encodeListCursor, type ListCursor } from './list-cursor.js';
import { LIST_SORTS } from './list-sorts.js';
import { chooseIndexKeys, choosePunctuationKeys, chooseTrigrams, isLookedUpFirst } from './search-keys.js';
import * as matchRepo from './list-matches.repository.js';
import * as repo from './list.repository.js';
import { createSearchSample } from './search-sample.js';

/**
 * The plan that read a page: one of the four, the walk through a search's trigram candidates (SQLite), or the
 * read of one application's mails (`application=`, readApplicationPage).
 */
export type ListPlanLabel = ListPlan['name'] | 'walk through candidates' | 'application';

export interface ListMailsInput {
  statuses?: number[] | undefined;
  q?: string | undefined;
  /** ISO 8601 instants: received at or after `receivedFrom`, before `receivedTo`. */
  receivedFrom?: string | undefined;
  receivedTo?: string | undefined;
  sort?: MailSort | undefined;
  order?: 'asc' | 'desc' | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
  /** One application's mails: an API key's id, or `none` for those no key submitted (docs/api.md). */
  application?: string | undefined;
}

export function createListService({ store, withRecipients }: { store: Store; withRecipients: (rows: MailRow[]) => Promise<Mail[]> }) {
  const { db } = store;
  // Which part of a search is rare enough to look up in the trigram index (chooseTrigrams, chooseIndexKeys).
  const searchSample = createSearchSample(db);

  /**
   * One page of the list (docs/query-plans.md): the counters give the total of a status filter; any other
   * term is counted up to the cap, and that count (the matches' ids) is what `planList` chooses from.
   * `plan` names the plan that read the page, `countSource` where the count read its matches (undefined:
   * nothing to count), `indexKeys` and `punctuationKeys` what PostgreSQL's indexes looked the search up by,
   * for tests and the benchmark; the route's schema leaves them out of the answer.
   */
  async function listMails(
    input: ListMailsInput,
    options: ListOptions = DEFAULT_LIST_OPTIONS,
  ): Promise<{
    data: Mail[];
    meta: MailListMeta;
    plan: ListPlanLabel;
    countSource: MatchSource | undefined;
    /** PostgreSQL: what the trigram index looked the search up by (chooseIndexKeys); undefined: the whole search. */
    indexKeys: readonly string[] | undefined;
    /** PostgreSQL: the punctuation keys `mail_search` looked the search up by (choosePunctuationKeys). */
    punctuationKeys: readonly string[] | undefined;
  }> {
    const sort = input.sort ?? 'receivedDate';
    const order = input.order ?? 'desc';
    const cursor = input.cursor === undefined ? undefined : decodeListCursor(input.cursor, sort, order);
    if (input.cursor !== undefined && !cursor)
      throw badRequest('invalid_cursor', 'cursor is not one this server issued for this sort and order; start again without cursor');
    const statuses = input.statuses && input.statuses.length > 0 ? [...new Set(input.statuses)] : undefined;
    const filter: ListFilter = {
      statuses: statuses && statuses.length < STATUSES.length ? statuses : undefined,
      search: input.q?.trim().toLowerCase() || undefined,
      receivedFrom: input.receivedFrom !== undefined ? Date.parse(input.receivedFrom) : undefined,
      receivedTo: input.receivedTo !== undefined ? Date.parse(input.receivedTo) : undefined,
    };
    if (filter.receivedFrom !== undefined && filter.receivedTo !== undefined && filter.receivedFrom >= filter.receivedTo) {
      throw badRequest('invalid_date_range', 'query.receivedTo must be later than query.receivedFrom');
    }

    const counts = await getStatusCounts(db);
    const statusRows = [...counts].reduce((sum, [status, n]) => sum + (!filter.statuses || filter.statuses.includes(status) ? n : 0), 0);
    const totalRows = [...counts.values()].reduce((sum, n) => sum + n, 0);
    const shares = isIndexedSearch(filter.search) ? searchSample.sharesFor(totalRows) : undefined;
    const trigrams = store.engine === 'sqlite' && isIndexedSearch(filter.search) ? chooseTrigrams(filter.search, shares?.trigram) : [];
    // PostgreSQL looks a search of 3+ characters up in `mail_search` (migration 031): by the keys the sample
    // chooses, or the whole search until the first sample is read.
    if (store.engine === 'postgres' && isIndexedSearch(filter.search)) {
      filter.searchLookup = true;
      if (shares) {
        filter.punctuationKeys = choosePunctuationKeys(filter.search, shares);
        // Looked up by its punctuation, the search is kept from the trigram index of its text (no key) and
        // checked on the rows found.
        filter.indexKeys = filter.punctuationKeys ? [] : chooseIndexKeys(filter.search, shares, statusRows / Math.max(totalRows, 1));
      }
    }
    if (input.application !== undefined) {
      filter.apiKeyId = await applicationIdOf(input.application);
      const read: repo.PageRead = {
        filter,
        sort,
        descending: (order === 'desc') !== (cursor?.direction === 'prev'),
        after: cursor?.position ?? undefined,
        take: input.limit === undefined ? undefined : input.limit + 1,
      };
      // Counted up to the cap through (api_key_id, id) or (api_key_id, received_at) and the other terms.
      const [rows, matchIds] = await Promise.all([
        repo.readApplicationPage(db, read),
        matchRepo.findMatchingIds(db, store.engine, filter, options.countCap + 1, 'seek'),
      ]);
      return {
        ...(await pageOf({
          rows,
          cursor,
          input,
          sort,
          order,
          counts,
          byShownStatus: false,
          matches: matchIds.length,
          counted: true,
          options,
        })),
        plan: 'application',
        countSource: 'seek',
        indexKeys: undefined,
        punctuationKeys: undefined,
      };
    }
    const probed = isCounted(filter) ? await matchStatsOf(filter, statusRows, totalRows, trigrams, options) : undefined;
    const stats = probed?.stats;
    const countSource = stats && chooseMatchSource(filter, store.engine, stats, options.countCap + 1);
    // The probe read every candidate of a rare search already: its rows are checked by id, without asking the
    // trigram index again (a full address's dozen trigrams cost 15-30 ms of FTS5 at 1M mails).
    const matchIds = !countSource
      ? undefined
      : countSource === 'trigrams' && probed?.everyCandidate
        ? await matchRepo.findMatchingAmong(db, filter, probed.everyCandidate)
        : await matchRepo.findMatchingIds(db, store.engine, filter, options.countCap + 1, countSource, trigrams);
    // SQLite counted a search through its trigram index, newest first: the share of the ids its matches
    // spanned tells how many mails it is on, if they are spread like the ids. Counted through a seek, the
    // probe of its candidates told it.
    const fromTrigrams = countSource === 'trigrams';
    const idRange =
      fromTrigrams && matchIds && matchIds.length > options.countCap ? (probed?.idRange ?? (await matchRepo.findIdRange(db))) : undefined;
    const expectedMatches = idRange && matchIds ? spreadOverIds(matchIds, idRange) : stats?.candidates;
    const walkShare = estimateWalkShare(filter, sort, {
      statusRows,
      totalRows,
      rangeRows: stats?.rangeRows,
      candidates: stats?.candidates,
      sampledShareOf: shares?.text,
      counted: matchIds?.length,
      // Counted through the trigrams, newest first: the matches of every term, spread over the ids.
      matchesOfEveryTerm: idRange ? expectedMatches : undefined,
    });
    const pageRows = input.limit === undefined ? undefined : input.limit + 1;
    const largestStatus = Math.max(
      ...[...counts].filter(([status]) => !filter.statuses || filter.statuses.includes(status)).map(([, n]) => n),
      1,
    );
    const seekSpread = filter.statuses ? Math.max(statusRows / largestStatus, 1) : 1;
    const plan = planList(
      filter,
      sort,
      { matches: matchIds?.length, expectedMatches, candidates: stats?.candidates, walkShare, pageRows, seekSpread },
      options,
    );
    // The candidates are collected only when the estimate says they are few; more than expected: the plain walk.
    const found =
      plan.name === 'walk' && plan.throughCandidates
        ? await matchRepo.findTrigramCandidates(db, trigrams, options.candidateRows + 1)
        : undefined;
    const candidates = found && found.length <= options.candidateRows ? found : undefined;

    const backwards = cursor?.direction === 'prev';
    const read: repo.PageRead = {
      filter,
      sort,
      descending: (order === 'desc') !== backwards,
      after: cursor?.position ?? undefined,
      take: input.limit === undefined ? undefined : input.limit + 1,
    };
    let answered: ListPlanLabel = candidates ? 'walk through candidates' : plan.name;
    // Every match is read through the source that reads the fewest rows to get them all. PostgreSQL looks a rare
    // search up first; a common one is checked on the rows the other terms find (`lookUpFirstShare`).
    const sortRead =
      filter.searchLookup && !isLookedUpFirst(filter.search!, shares, options.lookUpFirstShare)
        ? { ...read, filter: { ...filter, searchLookup: false } }
        : read;
    const readSorted = () =>
      repo.readSortedPage(db, store.engine, sortRead, stats ? chooseMatchSource(filter, store.engine, stats, Infinity) : 'seek', trigrams);
    let rows: MailRow[];
    // The status sort of statuses alone orders them as they show (a leased mail is Processing: mail/leases.ts),
    // which no index of the record holds: one status after another. With a search or a date range the planner
    // reads the stored status, where a mail being sent sorts among the Queued for its send's moment (docs/api.md).
    const byShownStatus =
      sort === 'status' && filter.search === undefined && filter.receivedFrom === undefined && filter.receivedTo === undefined;
    if (byShownStatus) {
      rows = await repo.readStatusOrderPage(db, read);
      answered = 'index';
    } else if (plan.name === 'gather') rows = await repo.readIdsPage(db, store.engine, read, matchIds!);
    else if (plan.name === 'sort') rows = await readSorted();
    else {
      const walked = await repo.readIndexPage(db, store.engine, read, plan.name === 'walk' ? plan.bound : undefined, candidates);
      rows = walked.rows;
      if (!walked.complete) {
        answered = 'sort';
        rows = await readSorted();
      }
    }
    const matches = matchIds?.length ?? statusRows;
    return {
      ...(await pageOf({ rows, cursor, input, sort, order, counts, byShownStatus, matches, counted: matchIds !== undefined, options })),
      plan: answered,
      countSource,
      indexKeys: filter.indexKeys,
      punctuationKeys: filter.punctuationKeys,
    };
  }

  /** An API key's id as the filter takes it (null: `none`); an id no key has answers 404, as the statistics do. */
  async function applicationIdOf(application: string): Promise<number | null> {
    if (application === 'none') return null;
    const id = Number(application);
    if ((await findApplicationName(db, id)) === undefined)
      throw notFound('application_not_found', `query.application: no application (API key) has the id ${id}`);
    return id;
  }

  /**
   * The page's answer from the rows read (a page and one more, in the order read): its cursors, and the total
   * from the matches counted (`counted`: up to the cap + 1, more is a lower bound) or the counters.
   */
  async function pageOf({
    rows,
    cursor,
    input,
    sort,
    order,
    counts,
    byShownStatus,
    matches,
    counted,
    options,
  }: {
    rows: MailRow[];
    cursor: ListCursor | undefined;
    input: ListMailsInput;
    sort: MailSort;
    order: 'asc' | 'desc';
    counts: Map<number, number>;
    byShownStatus: boolean;
    matches: number;
    counted: boolean;
    options: ListOptions;
  }): Promise<{ data: Mail[]; meta: MailListMeta }> {
    const backwards = cursor?.direction === 'prev';
    const hasMore = input.limit !== undefined && rows.length > input.limit;
    if (hasMore) rows.pop();
    if (backwards) rows.reverse();

    // As they show (a leased mail is Processing); the cursors keep the values the pages are read by: stored, except
    // in the status sort of statuses alone.
    const shown = await withLeases(db, rows);
    const cursorAt = (row: MailRow | undefined, direction: 'next' | 'prev') => {
      if (!row) return null;
      const value = byShownStatus ? shown[rows.indexOf(row)]!.status : row[LIST_SORTS[sort].column];
      return encodeListCursor(sort, order, { position: { value, id: row.id }, direction });
    };
    const fromFarEnd = backwards && cursor.position === null;
    // Forwards, a page after a cursor always has one before it; backwards, the page we came from follows
    // (except on the last page, read from the far end: nothing follows it).
    const nextCursor = fromFarEnd ? null : backwards || hasMore ? cursorAt(rows.at(-1), 'next') : null;
    const prevCursor = (backwards ? hasMore : cursor !== undefined) ? cursorAt(rows[0], 'prev') : null;
    // The last page is the far end read backwards; offered whenever a page follows this one.
    const lastCursor =
      input.limit !== undefined && nextCursor !== null ? encodeListCursor(sort, order, { position: null, direction: 'prev' }) : null;
    // Counted matches stop at the cap + 1: more is a lower bound. The counters are exact at any size.
    const isLowerBound = counted && matches > options.countCap;
    return {
      data: await withRecipients(shown),
      meta: {
        total: isLowerBound ? options.countCap : matches,
        totalIsLowerBound: isLowerBound,
        totalIsEstimate: false,
        nextCursor,
        prevCursor,
        lastCursor,
        counts: Object.fromEntries(STATUSES.map((s) => [String(s.code), counts.get(s.code) ?? 0])),
      },
    };
  }

  /**
   * What `chooseMatchSource` weighs (SQLite, a search of 3+ characters with statuses or a date range): the
   * range's mails, estimated from the span of all receipt times as if mails arrived evenly; and the search's
   * trigram candidates, from how far back among the ids its first `countCap + 1` reach (ids only, no row read).
   * `everyCandidate`: the probe's ids when they are all the search's candidates (at most `countCap`).
   */
  async function matchStatsOf(
    filter: ListFilter,
    statusRows: number,
    totalRows: number,
    trigrams: readonly string[],
    options: ListOptions,
  ): Promise<{ stats: MatchStats; everyCandidate?: number[] | undefined; idRange?: { min: number; max: number } | undefined }> {
    const stats: MatchStats = { statusRows, totalRows };
    const hasRange = filter.receivedFrom !== undefined || filter.receivedTo !== undefined;
    if (hasRange) {
      const span = await matchRepo.findReceivedSpan(db);
      const [first, last] = span ? [span.min, span.max + 1] : [0, 1];
      const from = Math.max(filter.receivedFrom ?? first, first);
      const to = Math.min(filter.receivedTo ?? last, last);
      stats.rangeRows = Math.round((totalRows * Math.max(to - from, 0)) / (last - first));
    }
    if (store.engine !== 'sqlite' || !isIndexedSearch(filter.search) || (filter.statuses === undefined && !hasRange)) return { stats };
    const probe = await matchRepo.findTrigramCandidates(db, trigrams, options.countCap + 1);
    const idRange = probe.length > options.countCap ? await matchRepo.findIdRange(db) : undefined;
    stats.candidates = idRange ? spreadOverIds(probe, idRange) : probe.length;
    return { stats, everyCandidate: idRange ? undefined : probe, idRange };
  }

  /** Resolves when the search sample being read, if any, is read (tests). */
  const searchSampleSettled = () => searchSample.settled();

  return { listMails, searchSampleSettled };
}

export type ListService = ReturnType<typeof createListService>;

/**
 * How many ids of the store a run of them stands for, read newest first and cut short: their count times the
 * share of all ids (`range`) that the run spanned, as if they were spread like the ids.
 */
function spreadOverIds(newestFirst: number[], range: { min: number; max: number }): number {
  return Math.round((newestFirst.length * (range.max - range.min + 1)) / (newestFirst[0]! - newestFirst.at(-1)! + 1));
}
