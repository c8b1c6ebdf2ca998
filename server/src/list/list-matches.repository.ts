/**
 * Which mails match a list filter (docs/query-plans.md): the filter's terms as SQL, shared with the page reads
 * (list.repository.ts); the count's ids up to the cap from the source `chooseMatchSource` chose, and its cheap
 * estimates (the trigram candidates, the receipt span, the id range); the capped count and the id-order walk of a
 * bulk action's filter. Functions take `db | trx` first.
 */
import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import { statusTerm } from '../mail/leases.js';
import type { DbOrTrx, Engine } from '../store/connection.js';
import { escapeLike } from '../store/like.js';
import { engineOf } from '../store/statement-batch.js';
import type { Database } from '../store/schema.js';
import { isIndexedSearch, type MatchSource, type ListFilter } from './list-plan.js';

export type MailFilter = ListFilter;

export type MailQuery<O> = SelectQueryBuilder<Database, 'mails', O>;

/**
 * The filter's terms. `fence`: as `+column`, a no-op that tells SQLite not to seek with the column's index
 * (the trigram candidates drive instead); PostgreSQL's planner has statistics and mostly chooses well itself.
 * Columns are qualified: the trigram table of SQLite and PostgreSQL's `mail_search` have a `search_text` too.
 */
function termsOf(filter: ListFilter, fence = false, lookUpFirst = false): Array<RawBuilder<boolean>> {
  const ref = (column: string) => (fence ? sql`+${sql.ref(`mails.${column}`)}` : sql.ref(`mails.${column}`));
  const terms: Array<RawBuilder<boolean>> = [];
  // As they show: Processing is a stored Queued mail under a lease (mail/leases.ts).
  if (filter.statuses) terms.push(statusTerm(filter.statuses, 'mails', fence));
  if (filter.apiKeyId !== undefined)
    terms.push(filter.apiKeyId === null ? sql<boolean>`mails.api_key_id is null` : sql<boolean>`mails.api_key_id = ${filter.apiKeyId}`);
  if (filter.receivedFrom !== undefined) terms.push(sql<boolean>`${ref('received_at')} >= ${filter.receivedFrom}`);
  if (filter.receivedTo !== undefined) terms.push(sql<boolean>`${ref('received_at')} < ${filter.receivedTo}`);
  // PostgreSQL: the keys `mail_search`'s trigram indexes look the search up by (migration 031); none: checked on the row.
  const indexKeys = filter.searchLookup ? (filter.indexKeys ?? (filter.search === undefined ? [] : [filter.search])) : [];
  const punctuationKeys = filter.searchLookup ? (filter.punctuationKeys ?? []) : [];
  if (indexKeys.length > 0 || punctuationKeys.length > 0) {
    // The keys are what the indexes read; the whole search, hidden from them (`|| ''`), is checked on the rows
    // they found, unless it is the one key. A punctuation key is letters, digits and spelled punctuation only.
    const inSearch = [
      ...indexKeys.map((key) => sql<boolean>`search_text like ${`%${escapeLike(key)}%`} escape '\\'`),
      ...punctuationKeys.map((key) => sql<boolean>`keys like ${`%${key}%`}`),
    ];
    if (filter.search !== undefined && !(indexKeys.length === 1 && indexKeys[0] === filter.search && punctuationKeys.length === 0))
      inSearch.push(sql<boolean>`(search_text || '') like ${`%${escapeLike(filter.search)}%`} escape '\\'`);
    const found = sql`select mail_id from mail_search where ${sql.join(inSearch, sql` and `)}`;
    // `lookUpFirst`: every match is wanted (the plan `sort`), so the lookup runs once, before any row of `mails` is
    // read, and its ids are read by key. As a join, PostgreSQL may instead sort every mail of the other terms and
    // probe each for the search until the page is full (`illin` on 10 % of the mails, last 14 days, sorted by
    // From: 2.4 s, where the ids first took 0.5 s at 1M).
    terms.push(lookUpFirst ? sql<boolean>`mails.id = any(array(${found}))` : sql<boolean>`mails.id in (${found})`);
  } else if (filter.search !== undefined) {
    // Checked on each row read: SQLite's trigram table drives apart from these terms; PostgreSQL reads the record's
    // text (no index holds it, migration 031) for a search too short for trigrams, too common to look up
    // (chooseIndexKeys gave no key) or checked where a walk reads the row.
    terms.push(sql<boolean>`mails.search_text like ${`%${escapeLike(filter.search)}%`} escape '\\'`);
  }
  return terms;
}

/** `q` narrowed by every term of the filter; `lookUpFirst`: PostgreSQL's search looked up before the rest (termsOf). */
export function matching<O>(q: MailQuery<O>, filter: ListFilter, fence = false, lookUpFirst = false): MailQuery<O> {
  return termsOf(filter, fence, lookUpFirst).reduce((query, term) => query.where(term), q);
}

/**
 * The FTS5 query ANDing these trigrams (chooseTrigrams in search-keys.ts). Each is a quoted string, so `"`,
 * `*`, `NEAR`, `OR` and the like are text, never query syntax.
 */
export function trigramMatchQuery(trigrams: readonly string[]): string {
  return trigrams.map((trigram) => `"${trigram.replaceAll('"', '""')}"`).join(' AND ');
}

/**
 * The count: ids of mails matching the filter, `limit` at most, from the source `chooseMatchSource` chose.
 * `trigrams` (SQLite, a search of 3+ characters): the trigram index newest first, each candidate's row checked
 * (FTS5 walks its doclists from the highest rowid and stops at the limit). `seek` and `engine`: one statement
 * with every term; SQLite seeks the statuses' index or the date range's, PostgreSQL chooses by its statistics
 * of the words, dates and statuses.
 */
export async function findMatchingIds(
  db: DbOrTrx,
  engine: Engine,
  filter: ListFilter,
  limit: number,
  source: MatchSource,
  trigrams: readonly string[] = [],
): Promise<number[]> {
  if (engine === 'sqlite' && trigrams.length > 0 && source === 'trigrams') {
    const terms = termsOf(filter, true);
    const match = trigramMatchQuery(trigrams);
    // With statuses, each candidate's status is first looked up in the small `(status, id)` index, and only
    // the candidates in them read their row (a word on 5 % of the mails with a status of 6 %: ~17,000 rows
    // read for 1,001 matches before, ~3,000 now). The candidates are a co-routine, so that SQLite cannot
    // join the row first (LIMIT keeps it from flattening the subquery); it yields them newest first.
    const inStatuses = filter.statuses
      ? sql`and exists (select 1 from mails s indexed by mails_status_idx where ${statusTerm(filter.statuses, 's')} and s.id = mails_fts.rowid)`
      : sql``;
    const candidates = sql`(select rowid as id from mails_fts where mails_fts match ${match} ${inStatuses}
      order by rowid desc limit -1 offset 0)`;
    const { rows } = await sql<{ id: number }>`select mails.id from ${candidates} as f join mails on mails.id = f.id
      where ${sql.join(terms, sql` and `)} order by f.id desc limit ${limit}`.execute(db);
    return rows.map((r) => Number(r.id));
  }
  const rows = await matching(db.selectFrom('mails').select('id'), filter).limit(limit).execute();
  return rows.map((r) => Number(r.id));
}

/** The count among known candidates (every trigram candidate of the search): those matching the filter, newest first. */
export async function findMatchingAmong(db: DbOrTrx, filter: ListFilter, candidates: number[]): Promise<number[]> {
  if (candidates.length === 0) return [];
  const rows = await matching(db.selectFrom('mails').select('id'), filter, true)
    .where('id', 'in', candidates)
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => Number(r.id));
}

/** SQLite: the ids holding every one of `trigrams` (chooseTrigrams), newest first, `limit` at most. No row is read. */
export async function findTrigramCandidates(db: DbOrTrx, trigrams: readonly string[], limit: number): Promise<number[]> {
  const { rows } = await sql<{ id: number }>`select rowid as id from mails_fts where mails_fts match ${trigramMatchQuery(trigrams)}
    order by rowid desc limit ${limit}`.execute(db);
  return rows.map((r) => Number(r.id));
}

/** The earliest and latest receipt time (two seeks of the received index), or undefined for an empty store. */
export async function findReceivedSpan(db: DbOrTrx): Promise<{ min: number; max: number } | undefined> {
  const end = (direction: 'asc' | 'desc') =>
    db.selectFrom('mails').select('received_at').orderBy('received_at', direction).limit(1).executeTakeFirst();
  const [first, last] = await Promise.all([end('asc'), end('desc')]);
  return first && last ? { min: Number(first.received_at), max: Number(last.received_at) } : undefined;
}

/** The lowest and highest mail id, or undefined for an empty store. */
export async function findIdRange(db: DbOrTrx): Promise<{ min: number; max: number } | undefined> {
  // Two subqueries: SQLite answers `min(id)` or `max(id)` alone from one end of the index, but a query asking
  // for both scans the whole table.
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
 * Counts mails matching a filter up to `cap`; more means "at least cap" (a bulk action's filter). Status and
 * date terms seek their indexes (covering, so no row is read); a search reads rows.
 */
export async function countMailRowsUpTo(db: DbOrTrx, filter: MailFilter, cap: number): Promise<number> {
  const inner = matching(db.selectFrom('mails').select('id'), withSearchLookup(db, filter)).limit(cap);
  const row = await db
    .selectFrom(inner.as('m'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The next `limit` ids matching the list's filter, in id order after `afterId` and up to `maxId`: how a bulk
 * action walks its filter in short chunks (keyset on the primary key, so each chunk is one seek).
 */
export async function listMatchingIds(db: DbOrTrx, filter: MailFilter, afterId: number, maxId: number, limit: number): Promise<number[]> {
  const rows = await matching(db.selectFrom('mails').select('id'), withSearchLookup(db, filter))
    .where('id', '>', afterId)
    .where('id', '<=', maxId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.id));
}

/** A bulk action's filter as PostgreSQL reads it: a search of 3+ characters looked up whole in `mail_search`. */
function withSearchLookup(db: DbOrTrx, filter: MailFilter): MailFilter {
  return engineOf(db) === 'postgres' && isIndexedSearch(filter.search) ? { ...filter, searchLookup: true } : filter;
}
