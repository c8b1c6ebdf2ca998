/**
 * All SQL that reads mails, and inserts new ones: the list (keyset paging), the per-status counters,
 * recipients, contents and the event log. Status changes, their events and counter moves are
 * `transition.repository.ts`.
 * Functions take `db | trx` first. A little over ~250 lines: the list query (keyset paging with its index
 * notes) is one piece, and the insert of new mails belongs beside the reads of what it inserted.
 */
import { CompiledQuery, sql, type AliasedSelectQueryBuilder, type SelectQueryBuilder } from 'kysely';
import { MIN_INDEXED_SEARCH, type MailSort } from '@outbox/contract';
import type { DbOrTrx, Engine } from '../store/connection.js';
import type { Database, MailRecipientRow, MailRow, NewMailRow } from '../store/schema.js';
import type { Cursor, SortValue } from './cursor.js';

export const SORT_COLUMNS = {
  receivedDate: 'received_at',
  lastUpdate: 'last_update_at',
  providerSentDate: 'provider_sent_at',
  subject: 'subject',
  status: 'status',
  from: 'from_mail',
  to: 'first_to_mail',
} as const satisfies Record<MailSort, keyof MailRow>;

export type SortColumn = (typeof SORT_COLUMNS)[MailSort];

export interface MailFilter {
  statuses?: number[] | undefined;
  /** Lower-cased search text, matched as a substring of `search_text`. */
  search?: string | undefined;
  /** Received at or after this instant (ms, inclusive). */
  receivedFrom?: number | undefined;
  /** Received before this instant (ms, exclusive). */
  receivedTo?: number | undefined;
  /**
   * Only these mails can match: the search's candidates from the trigram index. They are read by id and
   * still checked against every other term, the search's LIKE included (the index finds a superset).
   */
  candidateIds?: number[] | undefined;
}

export interface ListPageQuery extends MailFilter {
  sort: MailSort;
  order: 'asc' | 'desc';
  /** undefined: every matching row. */
  limit?: number | undefined;
  cursor?: Cursor | undefined;
  /**
   * The date range holds few rows: read them through the received-date index and sort them, instead of
   * walking the sort's own index past every row outside the range. Implied by `candidateIds`.
   */
  fewRows?: boolean | undefined;
  /**
   * The few rows are a date range's (counted at most `fewRows` with the statuses): the date index (with the
   * statuses) drives, and the search's trigram candidates are not joined in. With them, SQLite read every
   * candidate of a common word by id (`last 24 h q=shipped status=4 sort=subject`: 150 ms instead of 24).
   */
  fewRowsByDate?: boolean | undefined;
  /**
   * Look at no more than this many rows of the sort's index, and filter those: a page found among them is
   * exact; otherwise `walkedOut` says so and the caller reads the matches through their own indexes
   * (`fewRows`). Bounds the walk when the matches may sit far along the sort order (a common word whose
   * mails all share a subject; a date range sorted by status).
   */
  walkLimit?: number | undefined;
  /**
   * SQLite, an unbounded walk with a search: each index entry's id is checked against the search's trigram
   * candidates (collected once) before its row is read, so the rows between matches are never read. For a
   * word of middling frequency (mail.service.ts, `searchWalkCandidates`).
   */
  searchIndexWalk?: boolean | undefined;
  /**
   * With `candidateIds` and no anchor: count every matching row in the same read (`count(*) over ()`), so the
   * candidates are read by id once, not once for the page and once more for the count.
   */
  withTotal?: boolean | undefined;
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const likeSearch = (search: string) => sql<boolean>`search_text like ${`%${escapeLike(search)}%`} escape '\\'`;

/**
 * Each filter either drives an index or stays a plain filter on rows read through another index.
 * `+column` (a no-op arithmetic) is how SQLite is told not to use an index for a term; PostgreSQL's planner
 * has statistics and mostly chooses well by itself, and the no-op does it no harm.
 * - Status: one status with the received-date order seeks `(status, received_at, id)`, and so do several
 *   when a date range's few rows are read (`fewRows`). Otherwise, with several statuses
 *   or another sort, an index on status alone would make the engine fetch every matching row and sort them
 *   (200 ms for two statuses at 1M mails, 90 ms for one status sorted by subject); reading the sort's own
 *   index and filtering stops after one page instead.
 * - Date range: drives `received_at` when the page is in received order (a range seek in the sort's own
 *   index), when only counting, or when the range holds few rows (`fewRows`); otherwise it is a filter on
 *   the sort index's walk.
 * - Candidates: the page reads them by primary key.
 * `sort` undefined means counting: no order to keep, so every term may seek.
 */
function applyFilter<O>(query: SelectQueryBuilder<Database, 'mails', O>, filter: MailFilter, sort?: MailSort, fewRows = false) {
  let q = query;
  const byId = filter.candidateIds !== undefined;
  if (filter.candidateIds !== undefined) {
    // `in ()` is not SQL: no candidate means no row.
    q = filter.candidateIds.length > 0 ? q.where('id', 'in', filter.candidateIds) : q.where(sql<boolean>`1 = 0`);
  }
  if (filter.statuses && filter.statuses.length > 0) {
    // Several statuses seek too when a date range's few rows are read (`fewRows`): `(status, received_at, id)`
    // then holds exactly the rows to read, one range per status, instead of every status's rows in the range
    // (35,000 read for 4,500 kept in `last 24 h status=0,4 sort=lastUpdate` at 1M mails).
    const hasRange = filter.receivedFrom !== undefined || filter.receivedTo !== undefined;
    const seekByStatus =
      !byId && (sort === undefined || ((sort === 'receivedDate' || fewRows) && filter.statuses.length === 1) || (fewRows && hasRange));
    q = seekByStatus ? q.where('status', 'in', filter.statuses) : q.where(sql<number>`+status`, 'in', filter.statuses);
  }
  if (filter.receivedFrom !== undefined || filter.receivedTo !== undefined) {
    const seekByDate = !byId && (sort === undefined || sort === 'receivedDate' || fewRows);
    const receivedAt = seekByDate ? sql<number>`received_at` : sql<number>`+received_at`;
    if (filter.receivedFrom !== undefined) q = q.where(receivedAt, '>=', filter.receivedFrom);
    if (filter.receivedTo !== undefined) q = q.where(receivedAt, '<', filter.receivedTo);
  }
  if (filter.search) q = q.where(likeSearch(filter.search));
  return q;
}

/**
 * One page in the requested order. Fetches one row more than asked to learn whether another page follows
 * in the direction of travel; `prev` pages are read in reverse order and turned around. A `prev` cursor
 * without a row (`id` null) reads from the far end: the last page, without OFFSET.
 */
export async function listMailRows(
  db: DbOrTrx,
  engine: Engine,
  query: ListPageQuery,
): Promise<{ rows: MailRow[]; hasMore: boolean; walkedOut: boolean; total?: number }> {
  const column = SORT_COLUMNS[query.sort];
  const isBackwards = query.cursor?.direction === 'prev';
  const readDescending = (query.order === 'desc') !== isBackwards;
  const direction = readDescending ? 'desc' : 'asc';
  const anchor =
    query.cursor && query.cursor.id !== null && query.cursor.value !== null
      ? { value: query.cursor.value, id: query.cursor.id }
      : undefined;

  const fetch = query.limit !== undefined ? query.limit + 1 : undefined;
  const walkLimit =
    fetch !== undefined && query.walkLimit !== undefined && !query.fewRows && !query.candidateIds ? query.walkLimit : undefined;
  // A bounded walk reads the sort's index with only the terms that seek in it (status and date range in
  // received order: the index is (status, received_at, id) or (received_at, id)), and filters outside.
  const walkFilter: MailFilter =
    walkLimit === undefined
      ? query
      : query.sort === 'receivedDate'
        ? {
            statuses: query.statuses?.length === 1 ? query.statuses : undefined,
            receivedFrom: query.receivedFrom,
            receivedTo: query.receivedTo,
          }
        : {};
  const take = walkLimit ?? fetch;
  /** The walked rows, filtered by every term the walk did not apply, in order, one page. */
  // `idOrderOnly`: the walked rows all share the sort value, so ordering by id keeps their order and lets the
  // engine stop after a page (ordering by the column too made SQLite sort the whole walk first).
  const filterWalk = async (
    walk: { as(alias: 'walk'): AliasedSelectQueryBuilder<MailRow, 'walk'> },
    idOrderOnly = false,
  ): Promise<MailRow[]> => {
    let q = db.selectFrom(walk.as('walk')).selectAll();
    for (const term of termsOutside(query, walkFilter)) q = q.where(term);
    const ordered = idOrderOnly ? q.orderBy('id', direction) : q.orderBy(column, direction).orderBy('id', direction);
    return (await ordered.limit(fetch!).execute()) as MailRow[];
  };
  const page = <Q extends SelectQueryBuilder<Database, 'mails', MailRow>>(q: Q): Q => (take !== undefined ? (q.limit(take) as Q) : q);
  // `+id`: the term must not drive (SQLite would read the candidates by id and sort them); it filters the
  // walk's index entries, which hold the id, before any row is read.
  const searchIndexTerm =
    query.searchIndexWalk &&
    engine === 'sqlite' &&
    walkLimit === undefined &&
    !query.fewRows &&
    query.candidateIds === undefined &&
    query.search !== undefined &&
    Array.from(query.search).length >= MIN_INDEXED_SEARCH
      ? sql<boolean>`+id in ${trigramCandidateIds(query.search)}`
      : undefined;
  const throughSearchIndex = <Q extends SelectQueryBuilder<Database, 'mails', MailRow>>(q: Q): Q =>
    searchIndexTerm ? (q.where(searchIndexTerm) as Q) : q;
  let rows: MailRow[];
  let matchingRows: number | undefined;
  if (query.candidateIds !== undefined || query.fewRows) {
    // Few rows, read through their own index (ids, date range, the search's trigrams) and sorted: the sort
    // column must not drive, or the engine walks its index and probes each entry against the few rows.
    // `+column` keeps it out on SQLite; on PostgreSQL an expression no index holds does.
    const sortBy = fencedSortColumn(engine, query.sort);
    let q = applyFilter(db.selectFrom('mails').selectAll(), query, query.sort, true);
    if (
      engine === 'sqlite' &&
      query.search &&
      query.candidateIds === undefined &&
      !query.fewRowsByDate &&
      Array.from(query.search).length >= MIN_INDEXED_SEARCH
    ) {
      q = q.where('id', 'in', trigramCandidateIds(query.search));
    }
    if (anchor) {
      const past = sql.raw(readDescending ? '<' : '>');
      q = q.where(sql<boolean>`(${sortBy} ${past} ${anchor.value} or (${sortBy} = ${anchor.value} and id ${past} ${anchor.id}))`);
    }
    if (query.withTotal && query.candidateIds !== undefined && !anchor) {
      // The window counts every row the filter keeps, before the sort and the limit take the page.
      const counted = (await page(
        q
          .select(sql<number | string>`count(*) over ()`.as('matching_rows'))
          .orderBy(sortBy, direction)
          .orderBy('id', direction),
      ).execute()) as Array<MailRow & { matching_rows: number | string }>;
      rows = counted.map(({ matching_rows: _, ...row }) => row);
      matchingRows = Number(counted[0]?.matching_rows ?? 0);
    } else {
      rows = await page(q.orderBy(sortBy, direction).orderBy('id', direction)).execute();
    }
  } else if (!anchor) {
    const walk = page(
      throughSearchIndex(applyFilter(db.selectFrom('mails').selectAll(), walkFilter, query.sort))
        .orderBy(column, direction)
        .orderBy('id', direction),
    );
    rows = walkLimit === undefined ? await walk.execute() : await filterWalk(walk);
  } else {
    // Keyset past (value, id), written as two index seeks: the rest of the rows sharing `value`, then the
    // rows beyond it. A row comparison `(column, id) < (value, id)` is one seek on PostgreSQL, but SQLite
    // only seeks on `column` and then walks every row that shares the value (all of one status, all of one
    // sender), which made deep pages of such sorts 100 times slower than page 1.
    const { value, id } = anchor;
    const past = readDescending ? '<' : '>';
    // The rest of the rows sharing `value`, past the cursor's id (the page's rows, or only their ids to count).
    const sharingValue = <O>(q: SelectQueryBuilder<Database, 'mails', O>) =>
      applyFilter(q, walkFilter, query.sort)
        .where(column, '=', value as never)
        .where('id', past, id);
    const sameValue = page(sharingValue(db.selectFrom('mails').selectAll()).orderBy('id', direction));
    // The rows sharing `value` are one short seek: only the walk beyond it goes through the search index.
    const beyond = page(
      throughSearchIndex(applyFilter(db.selectFrom('mails').selectAll(), walkFilter, query.sort))
        .where(column, past, value as never)
        .orderBy(column, direction)
        .orderBy('id', direction),
    );
    if (walkLimit !== undefined) {
      // A bounded walk goes one seek after the other. As one UNION ALL, SQLite sorted both arms whole (up to
      // walkLimit rows each, read in full: 33 ms for a deep page of `q=shipped sort=status`) before filtering;
      // apart, each stops once it has a page (under 1 ms each).
      const same = await filterWalk(sameValue, true);
      if (same.length >= fetch!) {
        rows = same;
      } else {
        // The matches beyond follow the ones sharing the value only if the walk saw every row sharing it
        // (an index-only count); otherwise this page is not found in the walk (`walkedOut`, below).
        const sharing = await db
          .selectFrom(sharingValue(db.selectFrom('mails').select('id')).limit(walkLimit).as('sharing'))
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        rows = Number(sharing.n) < walkLimit ? [...same, ...(await filterWalk(beyond))].slice(0, fetch) : same;
      }
    } else {
      const both = db
        .selectFrom(sameValue.as('same_value'))
        .selectAll()
        .unionAll(db.selectFrom(beyond.as('beyond')).selectAll());
      const walk =
        take !== undefined
          ? both.orderBy(column, direction).orderBy('id', direction).limit(take)
          : both.orderBy(column, direction).orderBy('id', direction);
      rows = (await walk.execute()) as MailRow[];
    }
  }
  // Fewer than a page among the walked rows: the page lies further (or this is the end; the caller's other
  // plan answers that too).
  const walkedOut = walkLimit !== undefined && rows.length < fetch!;
  const hasMore = query.limit !== undefined && rows.length > query.limit;
  if (hasMore) rows.pop();
  if (isBackwards) rows.reverse();
  return { rows, hasMore, walkedOut, ...(matchingRows !== undefined ? { total: matchingRows } : {}) };
}

/** The sort column as an expression no index holds, so that the planner cannot walk the sort's index. */
function fencedSortColumn(engine: Engine, sort: MailSort) {
  const column = SORT_COLUMNS[sort];
  if (engine === 'sqlite') return sql`+${sql.ref(column)}`;
  return TEXT_SORTS.has(sort) ? sql`(${sql.ref(column)} || '')` : sql`(${sql.ref(column)} + 0)`;
}

const TEXT_SORTS = new Set<MailSort>(['subject', 'from', 'to']);

/** The terms of `filter` that `applied` does not hold, as conditions on the walked rows. */
function termsOutside(filter: MailFilter, applied: MailFilter) {
  const terms = [];
  if (filter.statuses && filter.statuses.length > 0 && !applied.statuses)
    terms.push(sql<boolean>`status in (${sql.join(filter.statuses)})`);
  if (filter.receivedFrom !== undefined && applied.receivedFrom === undefined)
    terms.push(sql<boolean>`received_at >= ${filter.receivedFrom}`);
  if (filter.receivedTo !== undefined && applied.receivedTo === undefined) terms.push(sql<boolean>`received_at < ${filter.receivedTo}`);
  if (filter.search) terms.push(likeSearch(filter.search));
  return terms;
}

export function sortValueOf(row: MailRow, sort: MailSort): SortValue {
  return row[SORT_COLUMNS[sort]];
}

/**
 * Counts a filtered list up to `cap` rows; more means "at least cap". Status and date terms seek their
 * indexes (covering, so no row is read), candidates are read by id; only a search without candidates (a
 * query too short for trigrams) reads rows.
 */
export async function countMailRowsUpTo(db: DbOrTrx, filter: MailFilter, cap: number): Promise<number> {
  const inner = applyFilter(db.selectFrom('mails').select('id'), filter).limit(cap);
  const row = await db
    .selectFrom(inner.as('m'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** SQLite: the ids of the rows the FTS5 trigram index holds for `search` (3+ characters), as a subquery. */
function trigramCandidateIds(search: string) {
  return sql<number>`(select rowid from mails_fts where mails_fts match ${trigramMatchQuery(search)})`;
}

/**
 * The FTS5 query for a substring: some of its trigrams ANDed (every third and the last; any subset finds a
 * superset of the matches, and the LIKE that follows removes the rest). Each is a quoted string, so `"`,
 * `*`, `NEAR`, `OR` and the like are text, never query syntax. `search` has at least 3 characters.
 */
function trigramMatchQuery(search: string): string {
  const chars = Array.from(search);
  const starts = new Set<number>();
  for (let i = 0; i + 3 <= chars.length; i += 3) starts.add(i);
  starts.add(chars.length - 3);
  return [...starts]
    .slice(0, 12)
    .map(
      (i) =>
        `"${chars
          .slice(i, i + 3)
          .join('')
          .replaceAll('"', '""')}"`,
    )
    .join(' AND ');
}

export type SearchCandidates =
  /**
   * At most `cap` mails can match: these (newest first). `exact` (PostgreSQL): they are the mails matching
   * the whole filter, search, statuses and date range, as the lookup read them; otherwise (SQLite) a superset
   * of the search's matches, before any other term.
   */
  | { kind: 'few'; ids: number[]; exact: boolean }
  /** More: the newest `cap + 1` candidates, a sample to estimate from (SQLite). */
  | { kind: 'many'; newest: number[] }
  /**
   * More, or not looked up: the planner's estimate of the mails matching the whole filter (PostgreSQL).
   * `walk`: the caller's `walkIsCheaper` chose walking the sort's index with the search checked on each row.
   */
  | { kind: 'estimated'; rows: number; walk: boolean };

/**
 * Which mails may contain `filter.search` (at least 3 characters), from the trigram index alone.
 * - SQLite: FTS5 walks its doclists from the highest rowid and stops after `cap + 1`, cheap for any word;
 *   the candidates are a superset (trigrams, not the substring), which the LIKE of the page removes.
 * - PostgreSQL: walking the primary key for `cap + 1` matches of a common word reads tens of thousands of
 *   rows, so the planner's estimate of the whole filter decides first: more than `cap`, or a walk the
 *   caller finds cheaper than the lookup (`walkIsCheaper`), and nothing is looked up. Otherwise the GIN
 *   index finds the search's matches, newest first, with their status and date (the row is read for the
 *   recheck anyway), and the other terms are applied here: the ids are exactly the mails matching
 *   everything. A word the planner expects on at most `wordRows` mails is read whole, so that a rare status
 *   or a date range among its matches is counted exactly (`q=kowalski7 status=4`: 5,747 read, 330 kept).
 *   Asking the statement for the statuses instead leads the planner to AND the status's index (60,000
 *   entries), or, for a common word, to read all its mails.
 */
export async function findSearchCandidates(
  db: DbOrTrx,
  engine: Engine,
  filter: MailFilter & { search: string },
  limits: { cap: number; wordRows: number },
  walkIsCheaper: (estimatedRows: number) => Promise<boolean> = () => Promise.resolve(false),
): Promise<SearchCandidates> {
  const { cap } = limits;
  if (engine === 'sqlite') {
    const result = await sql<{ id: number }>`
      select rowid as id from mails_fts where mails_fts match ${trigramMatchQuery(filter.search)}
      order by rowid desc limit ${cap + 1}`.execute(db);
    const ids = result.rows.map((r) => Number(r.id));
    return ids.length <= cap ? { kind: 'few', ids, exact: false } : { kind: 'many', newest: ids };
  }
  const { statuses, receivedFrom, receivedTo } = filter;
  const hasOtherTerms = (statuses !== undefined && statuses.length > 0) || receivedFrom !== undefined || receivedTo !== undefined;
  const estimate = await estimateRows(db, applyFilter(db.selectFrom('mails').select('id'), filter).compile());
  if (await walkIsCheaper(estimate)) return { kind: 'estimated', rows: estimate, walk: true };
  if (estimate > cap) return { kind: 'estimated', rows: estimate, walk: false };
  const wordEstimate = hasOtherTerms
    ? await estimateRows(db, applyFilter(db.selectFrom('mails').select('id'), { search: filter.search }).compile())
    : estimate;
  const readAtMost = wordEstimate <= limits.wordRows ? limits.wordRows : cap;
  const rows = await db
    .selectFrom('mails')
    .select(['id', 'status', 'received_at'])
    .where(likeSearch(filter.search))
    .orderBy('id', 'desc')
    .limit(readAtMost + 1)
    .execute();
  // More matches than were read: the planner thought the word rarer than it is.
  if (rows.length > readAtMost) return { kind: 'estimated', rows: Math.max(estimate, cap + 1), walk: false };
  const ids = rows
    .filter(
      (r) =>
        (!statuses || statuses.length === 0 || statuses.includes(r.status)) &&
        (receivedFrom === undefined || Number(r.received_at) >= receivedFrom) &&
        (receivedTo === undefined || Number(r.received_at) < receivedTo),
    )
    .map((r) => Number(r.id));
  return ids.length <= cap ? { kind: 'few', ids, exact: true } : { kind: 'estimated', rows: ids.length, walk: false };
}

/** PostgreSQL's estimate of the rows a query returns (planning only, nothing is read). */
async function estimateRows(db: DbOrTrx, query: CompiledQuery): Promise<number> {
  const result = await db.executeQuery<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
    CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]),
  );
  return Math.round(result.rows[0]?.['QUERY PLAN'][0]?.Plan['Plan Rows'] ?? 0);
}

/** The lowest and highest mail id, or undefined for an empty store. */
export async function getIdBounds(db: DbOrTrx): Promise<{ min: number; max: number } | undefined> {
  // Two subqueries: SQLite answers `min(id)` or `max(id)` alone from one end of the index, but a query
  // asking for both scans the whole table (1M rows: ~0.5 s).
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('mails')
        .select((e) => e.fn.min('id').as('v'))
        .as('min'),
      eb
        .selectFrom('mails')
        .select((e) => e.fn.max('id').as('v'))
        .as('max'),
    ])
    .executeTakeFirst();
  return row && row.min !== null && row.max !== null ? { min: Number(row.min), max: Number(row.max) } : undefined;
}

/**
 * The next `limit` ids matching the list's filter, in id order after `afterId` and up to `maxId`: how a bulk
 * action walks its filter in short chunks (keyset on the primary key, so each chunk is one seek).
 */
export async function listMatchingIds(db: DbOrTrx, filter: MailFilter, afterId: number, maxId: number, limit: number): Promise<number[]> {
  const rows = await applyFilter(db.selectFrom('mails').select('id'), filter)
    .where('id', '>', afterId)
    .where('id', '<=', maxId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.id));
}

/** The highest mail id so far (0 when there is none): where a bulk filter action stops. */
export async function findMaxMailId(db: DbOrTrx): Promise<number> {
  const row = await db
    .selectFrom('mails')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}

/** Exact mails per status, from the counters kept with every change. */
export async function getStatusCounts(db: DbOrTrx): Promise<Map<number, number>> {
  const rows = await db.selectFrom('status_counts').select(['status', 'count']).execute();
  return new Map(rows.map((r) => [r.status, Number(r.count)]));
}

/** The earliest acceptance among mails in `status` (an index seek on (status, received_at, id)). */
export async function findOldestReceivedAt(db: DbOrTrx, status: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('mails')
    .select('received_at')
    .where('status', '=', status)
    .orderBy('received_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.received_at;
}

export async function listRecipients(db: DbOrTrx, mailIds: number[], kinds: string[] = ['to']): Promise<Map<number, MailRecipientRow[]>> {
  const byMail = new Map<number, MailRecipientRow[]>();
  // SQLite caps bound parameters per statement: ask in chunks.
  for (let start = 0; start < mailIds.length; start += 900) {
    const chunk = mailIds.slice(start, start + 900);
    const rows = await db
      .selectFrom('mail_recipients')
      .selectAll()
      .where('mail_id', 'in', chunk)
      .where('kind', 'in', kinds)
      .orderBy('mail_id')
      .orderBy('position')
      .execute();
    for (const row of rows) {
      const list = byMail.get(row.mail_id);
      if (list) list.push(row);
      else byMail.set(row.mail_id, [row]);
    }
  }
  return byMail;
}

export function findMailContent(db: DbOrTrx, mailId: number) {
  return db.selectFrom('mail_contents').selectAll().where('mail_id', '=', mailId).executeTakeFirst();
}

export function findMailRow(db: DbOrTrx, id: number): Promise<MailRow | undefined> {
  return db.selectFrom('mails').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listEvents(db: DbOrTrx, mailId: number) {
  return db.selectFrom('mail_events').selectAll().where('mail_id', '=', mailId).orderBy('id').execute();
}

export interface NewRecipient {
  kind: string;
  name: string;
  address: string;
}

/** A mail to insert (`insertMails` in transition.repository.ts, which sets its status from its creation). */
export interface NewMail {
  row: Omit<NewMailRow, 'status' | 'event_seq'>;
  recipients: NewRecipient[];
  content?:
    | {
        raw: Buffer | null;
        textBody: string | null;
        htmlBody: string | null;
        headersJson: string | null;
        envelopeFrom: string;
        sizeBytes: number;
      }
    | undefined;
}

/** Distinct envelope addresses: who the mail goes to (`mails.recipient_count`). */
export function envelopeRecipientCount(recipients: readonly NewRecipient[]): number {
  return new Set(recipients.filter((r) => r.kind === 'envelope').map((r) => r.address)).size;
}

/** Up to `limit` mails in `statuses` last changed before `before`, oldest first: what retention deletes next. */
export function listStaleMails(
  db: DbOrTrx,
  statuses: readonly number[],
  before: number,
  limit: number,
): Promise<Array<{ id: number; status: number }>> {
  return db
    .selectFrom('mails')
    .select(['id', 'status'])
    .where('last_update_at', '<', before)
    .where('status', 'in', [...statuses])
    .orderBy('last_update_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

export type { Engine };

/** The rows of these mails, in no particular order; missing ids are left out. */
export function findMailRows(db: DbOrTrx, ids: readonly number[]): Promise<MailRow[]> {
  return db
    .selectFrom('mails')
    .selectAll()
    .where('id', 'in', [...ids])
    .execute();
}
