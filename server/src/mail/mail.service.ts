/**
 * The mail service (docs/lifecycle.md): listing, detail, raw bytes, metrics, the change feed, and the
 * operator's actions (dequeue, requeue, delete, purge), which are mail-actions.ts.
 * Rows never leave this module: callers get the contract's `Mail`.
 */
import { MailStatus, STATUSES, type Mail, type MailDetail, type MailListMeta, type MailSort } from '@outbox/contract';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { createBulkActions } from './bulk-actions.js';
import { createMailActions, mailNotFound } from './mail-actions.js';
import { toMail, toMailDetail } from './mail-mapping.js';
import {
  chooseMatchSource,
  DEFAULT_LIST_OPTIONS,
  decodeListCursor,
  encodeListCursor,
  isCounted,
  isIndexedSearch,
  LIST_SORTS,
  planList,
  type MatchSource,
  type MatchStats,
  type ListFilter,
  type ListOptions,
  type ListPlan,
} from '../list/list-plan.js';
import * as repo from './mail.repository.js';

export { statusName, toMail } from './mail-mapping.js';

/** The plan that read a page: one of the four, or the walk through a search's trigram candidates (SQLite). */
export type ListPlanLabel = ListPlan['name'] | 'walk through candidates';

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

  /**
   * One page of the list (docs/query-plans.md): the counters give the total of a status filter; any other
   * term is counted up to the cap, and that count (the matches' ids) is what `planList` chooses from.
   * `plan` names the plan that read the page and `countSource` where the count read its matches (undefined:
   * nothing to count), for tests and the benchmark; the route's schema leaves both out of the answer.
   */
  async function listMails(
    input: ListMailsInput,
    options: ListOptions = DEFAULT_LIST_OPTIONS,
  ): Promise<{ data: Mail[]; meta: MailListMeta; plan: ListPlanLabel; countSource: MatchSource | undefined }> {
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

    const counts = await repo.getStatusCounts(db);
    const statusRows = [...counts].reduce((sum, [status, n]) => sum + (!filter.statuses || filter.statuses.includes(status) ? n : 0), 0);
    const totalRows = [...counts.values()].reduce((sum, n) => sum + n, 0);
    const stats = isCounted(filter) ? await matchStatsOf(filter, statusRows, totalRows, options) : undefined;
    const countSource = stats && chooseMatchSource(filter, store.engine, stats, options.countCap + 1);
    const matchIds = countSource ? await repo.findMatchingIds(db, store.engine, filter, options.countCap + 1, countSource) : undefined;
    // SQLite counted a search through its trigram index, newest first: the share of the ids its matches
    // spanned tells how many mails it is on, if they are spread like the ids. Counted through a seek, the
    // probe of its candidates told it.
    const fromTrigrams = countSource === 'trigrams';
    const idRange = fromTrigrams && matchIds && matchIds.length > options.countCap ? await repo.findIdRange(db) : undefined;
    const expectedMatches =
      idRange && matchIds
        ? Math.round((matchIds.length * (idRange.max - idRange.min + 1)) / (matchIds[0]! - matchIds.at(-1)! + 1))
        : stats?.candidates;
    const plan = planList(filter, sort, { matches: matchIds?.length, expectedMatches }, options);
    // The candidates are collected only when the estimate says they are few; more than expected: the plain walk.
    const found =
      plan.name === 'walk' && plan.throughCandidates
        ? await repo.findTrigramCandidates(db, filter.search!, options.candidateRows + 1)
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
    // Every match is read through the source that reads the fewest rows to get them all.
    const readSorted = () =>
      repo.readSortedPage(db, store.engine, read, stats ? chooseMatchSource(filter, store.engine, stats, Infinity) : 'seek');
    let rows: MailRow[];
    if (plan.name === 'gather') rows = await repo.readIdsPage(db, store.engine, read, matchIds!);
    else if (plan.name === 'sort') rows = await readSorted();
    else {
      const walked = await repo.readIndexPage(db, store.engine, read, plan.name === 'walk' ? plan.bound : undefined, candidates);
      rows = walked.rows;
      if (!walked.complete) {
        answered = 'sort';
        rows = await readSorted();
      }
    }
    const hasMore = input.limit !== undefined && rows.length > input.limit;
    if (hasMore) rows.pop();
    if (backwards) rows.reverse();

    const cursorAt = (row: MailRow | undefined, direction: 'next' | 'prev') =>
      row ? encodeListCursor(sort, order, { position: { value: row[LIST_SORTS[sort].column], id: row.id }, direction }) : null;
    const fromFarEnd = backwards && cursor.position === null;
    // Forwards, a page after a cursor always has one before it; backwards, the page we came from follows
    // (except on the last page, read from the far end: nothing follows it).
    const nextCursor = fromFarEnd ? null : backwards || hasMore ? cursorAt(rows.at(-1), 'next') : null;
    const prevCursor = (backwards ? hasMore : cursor !== undefined) ? cursorAt(rows[0], 'prev') : null;
    // The last page is the far end read backwards; offered whenever a page follows this one.
    const lastCursor =
      input.limit !== undefined && nextCursor !== null ? encodeListCursor(sort, order, { position: null, direction: 'prev' }) : null;
    // Counted matches stop at the cap + 1: more is a lower bound. The counters are exact at any size.
    const matches = matchIds?.length ?? statusRows;
    const isLowerBound = matchIds !== undefined && matches > options.countCap;

    return {
      data: await withRecipients(rows),
      meta: {
        total: isLowerBound ? options.countCap : matches,
        totalIsLowerBound: isLowerBound,
        totalIsEstimate: false,
        nextCursor,
        prevCursor,
        lastCursor,
        counts: Object.fromEntries(STATUSES.map((s) => [String(s.code), counts.get(s.code) ?? 0])),
      },
      plan: answered,
      countSource,
    };
  }

  /**
   * What `chooseMatchSource` weighs (SQLite, a search of 3+ characters with statuses or a date range): the
   * range's mails, estimated from the span of all receipt times as if mails arrived evenly; and the search's
   * trigram candidates, from how far back among the ids its first `countCap + 1` reach (ids only, no row read).
   */
  async function matchStatsOf(filter: ListFilter, statusRows: number, totalRows: number, options: ListOptions): Promise<MatchStats> {
    const stats: MatchStats = { statusRows, totalRows };
    const narrowed = filter.statuses !== undefined || filter.receivedFrom !== undefined || filter.receivedTo !== undefined;
    if (store.engine !== 'sqlite' || !isIndexedSearch(filter.search) || !narrowed) return stats;
    if (filter.receivedFrom !== undefined || filter.receivedTo !== undefined) {
      const span = await repo.findReceivedSpan(db);
      const [first, last] = span ? [span.min, span.max + 1] : [0, 1];
      const from = Math.max(filter.receivedFrom ?? first, first);
      const to = Math.min(filter.receivedTo ?? last, last);
      stats.rangeRows = Math.round((totalRows * Math.max(to - from, 0)) / (last - first));
    }
    const probe = await repo.findTrigramCandidates(db, filter.search, options.countCap + 1);
    const idRange = probe.length > options.countCap ? await repo.findIdRange(db) : undefined;
    stats.candidates = idRange
      ? Math.round((probe.length * (idRange.max - idRange.min + 1)) / (probe[0]! - probe.at(-1)! + 1))
      : probe.length;
    return stats;
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
