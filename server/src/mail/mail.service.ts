/**
 * The mail service (docs/lifecycle.md): listing, detail, raw bytes, metrics, the change feed, and the
 * operator's actions (dequeue, requeue, delete, purge), which are mail-actions.ts.
 * Rows never leave this module: callers get the contract's `Mail`.
 */
import { MailStatus, MIN_INDEXED_SEARCH, STATUSES, type Mail, type MailDetail, type MailListMeta, type MailSort } from '@outbox/contract';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { createBulkActions } from './bulk-actions.js';
import { createMailActions, mailNotFound } from './mail-actions.js';
import { toMail, toMailDetail } from './mail-mapping.js';
import { isPerStatusCheaper, listMailRowsPerStatus } from './list-per-status.js';
import * as repo from './mail.repository.js';

export { statusName, toMail } from './mail-mapping.js';

/**
 * A search too short for the trigram index (1–2 characters) is counted up to this many matches (then
 * `totalIsEstimate`): counting it means reading rows, and at 1M mails a cap of 10,000 cost ~55 ms.
 */
export const SEARCH_COUNT_CAP = 1_000;
/**
 * Where the list changes plan. Tests lower them to walk every plan on a few dozen mails; nothing else
 * should change them.
 * - searchCandidateCap: a search whose trigram candidates number at most this many reads them by id and
 *   counts them exactly; beyond, the word is common enough that walking the sort's index fills a page
 *   soon, and the total is an estimate. Reading N candidates by id costs about what walking the sort
 *   index past 50/density rows does, which is where the two plans meet.
 * - rangeCountCap: a date range is counted exactly up to this many mails (index only); beyond, an estimate.
 * - fewRows: a date range holding at most this many mails is read through the date index and sorted.
 * - walkRows: a common search or a large date range, in another order than received, looks at this many
 *   rows of the sort's index at most; when they hold less than a page, the matches are read through the
 *   search's (or the date's) own index and sorted instead. The matches of a common word may all sit far
 *   along the sort order (every "Order … has shipped" under O, sorted by subject): walking there row by row
 *   took 13 s at 1M mails on PostgreSQL. PostgreSQL in received order also bounds its walk of a status's
 *   index when it chose that walk over the trigram index (isWalkCheaper below).
 * - searchWalkCandidates (SQLite): a common search whose trigram candidates number about this many at most
 *   (estimated from the newest ones' spread over the ids) walks the received index checking each entry's id
 *   against the candidates, and reads a row only for those: the walk passes ~50 / density index entries
 *   (cheap, the index holds received_at and id) instead of as many rows. Collecting the candidates costs
 *   ~1.4 µs each, a row read with its LIKE ~6 µs; the two meet near 15,000 candidates at 1M mails (a word
 *   in 1.5% of them). At 5,747 matches this took a page from ~60 ms to ~12 ms.
 * - searchWordRows (PostgreSQL): a search with a status or a date range whose word the planner expects on at
 *   most this many mails reads all of them to keep those matching everything (exact, read by id); beyond,
 *   only the newest searchCandidateCap + 1. `q=kowalski7 status=4` (5,747 read, 330 kept): page 1 p50 24 ms,
 *   against 40 ms for the planner's own plan (it ANDed the status's 60,000 index entries).
 */
/** How many of a common search's newest candidates are checked to estimate its total. */
const ESTIMATE_SAMPLE = 500;
export const listTuning = {
  searchCandidateCap: 2_000,
  rangeCountCap: 10_000,
  fewRows: 5_000,
  walkRows: 5_000,
  searchWalkCandidates: 15_000,
  searchWordRows: 10_000,
};

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
}

export interface MailChange {
  /**
   * created and queued (a requeue) mean mails became due: a sleeping worker wakes for them. resync: the
   * change feed reconnected and may have missed changes, so whoever caches something reloads it.
   */
  type: 'created' | 'queued' | 'updated' | 'deleted' | 'resync';
  ids: number[];
}

export type MailChangeListener = (change: MailChange) => void;

export function createMailService({ store, clock }: { store: Store; clock: Clock }) {
  const { db } = store;

  /** Through the store's change feed, so other instances on the same PostgreSQL hear it too. */
  function notify(change: MailChange): void {
    store.changes.publish(change);
  }

  async function withRecipients(rows: MailRow[]): Promise<Mail[]> {
    const recipients = await repo.listRecipients(
      db,
      rows.map((r) => r.id),
    );
    return rows.map((row) => toMail(row, recipients.get(row.id)));
  }

  async function listMails(input: ListMailsInput): Promise<{ data: Mail[]; meta: MailListMeta }> {
    const sort = input.sort ?? 'receivedDate';
    const order = input.order ?? 'desc';
    const cursor = input.cursor ? decodeCursor(input.cursor, sort, order) : undefined;
    const statuses = input.statuses && input.statuses.length > 0 ? [...new Set(input.statuses)] : undefined;
    const search = input.q?.trim().toLowerCase() || undefined;
    const receivedFrom = input.receivedFrom !== undefined ? Date.parse(input.receivedFrom) : undefined;
    const receivedTo = input.receivedTo !== undefined ? Date.parse(input.receivedTo) : undefined;
    if (receivedFrom !== undefined && receivedTo !== undefined && receivedFrom >= receivedTo) {
      throw badRequest('invalid_date_range', 'query.receivedTo must be later than query.receivedFrom');
    }
    const hasRange = receivedFrom !== undefined || receivedTo !== undefined;
    const filter: repo.MailFilter = { statuses, search, receivedFrom, receivedTo };

    // A search of 3+ characters asks the trigram index for its candidates first (PostgreSQL: the planner's
    // estimate first, and nothing more when walking is cheaper). Few: the page and the count read just
    // those, by id. Many: the word is common, so walking the sort's index meets a page of matches soon, and
    // the candidates are a sample to estimate the total from.
    const countsRead = repo.getStatusCounts(db);
    const [counts, found] = await Promise.all([
      countsRead,
      search !== undefined && Array.from(search).length >= MIN_INDEXED_SEARCH
        ? repo.findSearchCandidates(
            db,
            store.engine,
            { ...filter, search },
            { cap: listTuning.searchCandidateCap, wordRows: listTuning.searchWordRows },
            async (estimatedRows) => isWalkCheaper(await countsRead, estimatedRows),
          )
        : undefined,
    ]);
    /** Every mail, and the mails of the chosen statuses (all of them without a status filter). */
    function totalsOf(statusCounts: Map<number, number>): { all: number; ofStatuses: number } {
      let all = 0;
      let ofStatuses = 0;
      for (const [status, count] of statusCounts) {
        all += count;
        if (!statuses || statuses.includes(status)) ofStatuses += count;
      }
      return { all, ofStatuses };
    }
    // PostgreSQL, received order: walking the index of each status (or of received_at) and checking the
    // search on each row meets a page after about (limit + 1) × walked / matches rows. Looking the word up
    // in the GIN index reads every mail holding it: matches × all / statuses' mails, if the word and the
    // statuses are independent. A common word with a rare status (`q=shipped status=2`): ~900 rows walked
    // against ~60,000 looked up. A word on at most `searchCandidateCap` mails is looked up: its count is exact.
    function isWalkCheaper(statusCounts: Map<number, number>, estimatedRows: number): boolean {
      if (sort !== 'receivedDate' || hasRange || input.limit === undefined) return false;
      const { all, ofStatuses } = totalsOf(statusCounts);
      const walked =
        !statuses || (statuses.length > 1 && !isPerStatusCheaper(statuses.length, ofStatuses, all)) ? all : statuses.length * ofStatuses;
      const matches = Math.max(estimatedRows, 1);
      const lookedUp = (matches * all) / Math.max(ofStatuses, 1);
      const walkedRows = ((input.limit + 1) * walked) / matches;
      return lookedUp > listTuning.searchCandidateCap && walkedRows < lookedUp && walkedRows * 2 <= listTuning.walkRows;
    }

    const { all: allTotal, ofStatuses: statusTotal } = totalsOf(counts);
    const candidateIds = found?.kind === 'few' ? found.ids : undefined;
    // A date range is counted up to a cap (its index is covering); a small one is also read through it.
    const rangeCount =
      hasRange && candidateIds === undefined
        ? await repo.countMailRowsUpTo(db, { statuses, receivedFrom, receivedTo }, listTuning.rangeCountCap + 1)
        : undefined;
    const fewRows = rangeCount !== undefined && rangeCount <= listTuning.fewRows && sort !== 'receivedDate';

    // What an estimate may not exceed: the status total, or a date range's exact count when it has one.
    const upperBound = () =>
      rangeCount !== undefined && rangeCount <= listTuning.rangeCountCap ? Math.min(rangeCount, statusTotal) : statusTotal;
    const countTotal = async (): Promise<{ total: number; totalIsEstimate: boolean }> => {
      let total: number;
      let totalIsEstimate = false;
      if (candidateIds) {
        total =
          found?.kind === 'few' && found.exact
            ? candidateIds.length
            : await repo.countMailRowsUpTo(db, { ...filter, candidateIds }, candidateIds.length + 1);
      } else if (found?.kind === 'many') {
        // The share of the newest 500 candidates that match (LIKE and every filter), over the ids they
        // span, extrapolated to the whole id range (each candidate checked is a row read, so not all
        // 2,001). Bounded by what is known for sure.
        const newest = found.newest.slice(0, ESTIMATE_SAMPLE);
        const [matchedInSample, bounds] = await Promise.all([
          repo.countMailRowsUpTo(db, { ...filter, candidateIds: newest }, newest.length + 1),
          repo.getIdBounds(db),
        ]);
        const extrapolated = bounds
          ? Math.round((matchedInSample * (bounds.max - bounds.min + 1)) / (bounds.max - Math.min(...newest) + 1))
          : 0;
        total = Math.min(Math.max(extrapolated, matchedInSample), upperBound());
        totalIsEstimate = true;
      } else if (found?.kind === 'estimated') {
        total = Math.min(found.rows, upperBound());
        totalIsEstimate = true;
      } else if (search) {
        // 1–2 characters: no trigram to look up; the page walks the sort's index and the count reads rows.
        total = await repo.countMailRowsUpTo(db, filter, SEARCH_COUNT_CAP + 1);
        totalIsEstimate = total > SEARCH_COUNT_CAP;
        if (totalIsEstimate) total = SEARCH_COUNT_CAP;
      } else if (rangeCount !== undefined) {
        totalIsEstimate = rangeCount > listTuning.rangeCountCap;
        total = Math.min(rangeCount, listTuning.rangeCountCap);
      } else {
        total = statusTotal;
      }
      return { total, totalIsEstimate };
    };

    const commonSearch = found?.kind === 'many' || found?.kind === 'estimated' || (search !== undefined && found === undefined);
    // Not in received order: there the matches of a word or a status are spread over time, the walk finds a
    // page soon, and reading every match instead costs more (all 66,000 of "shipped" for a deep page).
    const bounded = candidateIds === undefined && !fewRows && sort !== 'receivedDate' && (commonSearch || hasRange);
    // How many rows a walk would read for a page if the matches were spread evenly: beyond the bound, the
    // walk would run out anyway, so the matches are read through their own index at once.
    const share =
      found?.kind === 'estimated'
        ? found.rows / Math.max(1, allTotal)
        : found?.kind === 'many'
          ? found.newest.length / Math.max(1, found.newest[0]! - found.newest.at(-1)! + 1)
          : undefined;
    const walkTooLong = share !== undefined && (input.limit ?? 50) / Math.max(share, 1e-9) > listTuning.walkRows;
    // A word of middling frequency (SQLite): the unbounded walk (received order) checks index entries against
    // its trigram candidates before reading rows. A common word fills a page within a few hundred rows and
    // its candidates would cost more to collect than the walk.
    const searchIndexWalk =
      store.engine === 'sqlite' &&
      found?.kind === 'many' &&
      !bounded &&
      !fewRows &&
      share !== undefined &&
      share * allTotal <= listTuning.searchWalkCandidates;
    // A page of few candidates without a cursor position counts them in the same read (page 1, the last page).
    const countedWithPage = candidateIds !== undefined && !(cursor && cursor.id !== null && cursor.value !== null);
    // Several statuses in received order, few enough to be cheaper apart: a page per status, merged.
    const perStatus =
      sort === 'receivedDate' &&
      statuses !== undefined &&
      candidateIds === undefined &&
      !searchIndexWalk &&
      isPerStatusCheaper(statuses.length, statusTotal, allTotal);
    const listRows = (query: repo.ListPageQuery) =>
      perStatus && statuses ? listMailRowsPerStatus(db, store.engine, { ...query, statuses }) : repo.listMailRows(db, store.engine, query);
    const readPage = async () => {
      const page = {
        ...filter,
        candidateIds,
        fewRows,
        fewRowsByDate: fewRows,
        searchIndexWalk,
        withTotal: countedWithPage,
        sort,
        order,
        limit: input.limit,
        cursor,
      };
      if (bounded && walkTooLong) return repo.listMailRows(db, store.engine, { ...page, fewRows: true });
      if (found?.kind === 'estimated' && found.walk) {
        // The statuses' (or received_at's) index is walked, the search checked on each row: a page within
        // walkRows rows, or the planner's own plan (the end of the list, or fewer matches than estimated).
        const walked = await listRows({ ...page, walkLimit: listTuning.walkRows });
        return walked.walkedOut ? repo.listMailRows(db, store.engine, page) : walked;
      }
      const walked = await listRows({ ...page, walkLimit: bounded ? listTuning.walkRows : undefined });
      return walked.walkedOut ? repo.listMailRows(db, store.engine, { ...page, fewRows: true }) : walked;
    };
    const [{ rows, hasMore, total: countedTotal }, counted] = await Promise.all([readPage(), countedWithPage ? undefined : countTotal()]);
    const { total, totalIsEstimate } = counted ?? { total: countedTotal ?? 0, totalIsEstimate: false };

    const cursorAt = (row: MailRow | undefined, direction: 'next' | 'prev') =>
      row ? encodeCursor({ sort, order, value: repo.sortValueOf(row, sort), id: row.id, direction }) : null;
    const isBackwards = cursor?.direction === 'prev';
    const fromFarEnd = isBackwards && cursor.id === null;
    // Forwards, a page after a cursor always has one before it; backwards, the page we came from follows
    // (except on the last page, read from the far end: nothing follows it).
    const nextCursor = fromFarEnd ? null : isBackwards || hasMore ? cursorAt(rows.at(-1), 'next') : null;
    const prevCursor = (isBackwards ? hasMore : cursor !== undefined) ? cursorAt(rows[0], 'prev') : null;
    // The last page is the far end read backwards; offered whenever a page follows this one.
    const lastCursor =
      input.limit !== undefined && nextCursor !== null ? encodeCursor({ sort, order, value: null, id: null, direction: 'prev' }) : null;

    return {
      data: await withRecipients(rows),
      meta: {
        total,
        totalIsEstimate,
        nextCursor,
        prevCursor,
        lastCursor,
        counts: Object.fromEntries(STATUSES.map((s) => [String(s.code), counts.get(s.code) ?? 0])),
      },
    };
  }

  /** The row, its message (headers and bodies parsed from the stored bytes) and its event log. */
  async function getMailDetail(id: number): Promise<MailDetail> {
    const row = await repo.findMailRow(db, id);
    if (!row) throw mailNotFound(id);
    const [recipients, content, events] = await Promise.all([
      repo.listRecipients(db, [id], ['to', 'cc', 'bcc', 'envelope']),
      repo.findMailContent(db, id),
      repo.listEvents(db, id),
    ]);
    return toMailDetail(row, recipients.get(id) ?? [], content, events);
  }

  /** The stored RFC 5322 bytes, as they go to the provider. */
  async function getRawMessage(id: number): Promise<Buffer> {
    const row = await repo.findMailRow(db, id);
    if (!row) throw mailNotFound(id);
    const content = await repo.findMailContent(db, id);
    if (!content?.raw) throw notFound('message_not_stored', `Mail ${id} has no stored message (demo data has none).`);
    return content.raw;
  }

  const actions = createMailActions({ store, clock, notify, withRecipients });
  const bulk = createBulkActions({ store, clock, notify });

  /** Mails per status and the acceptance time of the oldest Queued one: for /metrics. */
  async function queueHealth(): Promise<{ counts: Record<number, number>; oldestQueuedReceivedAt: number | undefined }> {
    const [counts, oldest] = await Promise.all([repo.getStatusCounts(db), repo.findOldestReceivedAt(db, MailStatus.Queued)]);
    return { counts: Object.fromEntries(counts), oldestQueuedReceivedAt: oldest };
  }

  return {
    queueHealth,
    listMails,
    getMailDetail,
    getRawMessage,
    ...actions,
    ...bulk,
    notify,
    onChange(listener: MailChangeListener): () => void {
      // The feed carries only what notify() published, here or in another instance of this same code.
      return store.changes.subscribe(listener as (change: { type: string; ids: number[] }) => void);
    },
  };
}

export type MailService = ReturnType<typeof createMailService>;
