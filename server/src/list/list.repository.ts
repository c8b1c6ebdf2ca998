/**
 * The list's page reads (docs/query-plans.md; list-plan.ts chooses among them): one function per plan (`index`
 * and `walk` read the sort's index, `gather` the counted ids, `sort` every match sorted by the engine), an
 * application's list, and the status sort as it shows. Which mails match a filter is list-matches.repository.ts.
 * Functions take `db | trx` first.
 */
import { sql, type RawBuilder } from 'kysely';
import { MailStatus, type MailSort } from '@outbox/contract';
import { statusTerm } from '../mail/leases.js';
import type { DbOrTrx, Engine } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import type { MatchSource, ListFilter } from './list-plan.js';
import { matching, trigramMatchQuery, type MailQuery } from './list-matches.repository.js';
import { LIST_SORTS, type Position, type SortValue } from './list-sorts.js';

/** One page to read: the filter, the sort, which end of the index to read from, where to start, how many rows. */
export interface PageRead {
  filter: ListFilter;
  sort: MailSort;
  /** From the index's high end: desc order forwards, asc order backwards. */
  descending: boolean;
  after?: Position | undefined;
  /** Rows wanted (a page and one more, to learn whether another follows); undefined: every match. */
  take: number | undefined;
}

const mailsTable = (db: DbOrTrx) => db.selectFrom('mails');

/**
 * SQLite: the table read through the sort table's index (`INDEXED BY`, kept when SQLite flattens the
 * subquery). Its planner otherwise weighs indexes by `sqlite_stat1`, and one index without statistics (made
 * after the last ANALYZE) looked cheapest for `status = 4 order by received_at`: 0.9 s instead of a seek.
 * PostgreSQL chooses by its statistics.
 */
function mailsThrough(db: DbOrTrx, engine: Engine, index: string | undefined): ReturnType<typeof mailsTable> {
  if (engine !== 'sqlite' || index === undefined) return mailsTable(db);
  return db.selectFrom(sql`(select * from mails indexed by ${sql.raw(index)})`.as('mails')) as unknown as ReturnType<typeof mailsTable>;
}

/**
 * The page in the engine's order of the sort column hidden from its indexes (`+column`; PostgreSQL: an
 * expression no index holds), so the engine sorts the rows the filter found instead of walking the sort's
 * index and probing each entry against them.
 */
function sortedPage<O>(q: MailQuery<O>, engine: Engine, read: PageRead): MailQuery<O> {
  const value = hiddenSortValue(engine, read.sort);
  const direction = read.descending ? 'desc' : 'asc';
  if (read.after) q = q.where(pastPosition(engine, read, read.after));
  const ordered = q.orderBy(value, direction).orderBy('id', direction);
  return read.take === undefined ? ordered : ordered.limit(read.take);
}

/**
 * Plans `index` and `walk`: the sort's index read in order from `after`; with statuses one seek of
 * `(status, column, id)` per status, merged (the engine orders the merged rows, so text follows its
 * collation). A date range in received order is part of the seek; any other term is checked on each row.
 * With `bound`, each seek looks at that many entries at most: `complete` is false when the page is not known.
 * A seek that stopped at its bound short of its rows knows its matches up to the last entry it looked at (its
 * frontier); with several statuses, the merged rows up to the nearest frontier are still known, and they make
 * the page when there are enough of them (`status=2,3 sort=providerSentDate asc last 7 d`: the Processing
 * mails, never sent, come first; the oldest sent ones are all older than the range).
 */
export async function readIndexPage(
  db: DbOrTrx,
  engine: Engine,
  read: PageRead,
  bound?: number,
  candidates?: number[],
): Promise<{ rows: MailRow[]; complete: boolean }> {
  const { statuses } = read.filter;
  if (engine === 'postgres' && bound === undefined && !candidates && statuses && statuses.length > 1 && read.take !== undefined) {
    if (read.filter.search === undefined && read.filter.receivedFrom === undefined && read.filter.receivedTo === undefined)
      return { rows: await readStatusesAtOnce(db, read, statuses, read.take), complete: true };
  }
  // Every match (no limit) is one read with the statuses as one term: nothing to merge.
  const seeks = statuses && read.take !== undefined ? statuses.map((status) => [status]) : [statuses];
  const parts = await Promise.all(seeks.map((only) => readSeek(db, engine, read, only, bound, candidates)));
  const complete = parts.every((part) => part.complete);
  if (parts.length === 1) return { rows: parts[0]!.rows, complete };
  const rows = new Map(parts.flatMap((part) => part.rows.map((row): [number, MailRow] => [row.id, row])));
  if (rows.size === 0) return { rows: [], complete };
  const frontiers = parts.flatMap((part) => (part.frontier ? [part.frontier] : []));
  // The engine orders the merged rows (its collation), keeping only those not past any frontier.
  let merged = db
    .selectFrom('mails')
    .select('id')
    .where('id', 'in', [...rows.keys()]);
  for (const frontier of frontiers) merged = merged.where(sql<boolean>`not ${pastPosition(engine, read, frontier)}`);
  const order = await sortedPage(merged, engine, { ...read, after: undefined }).execute();
  const known = complete || (read.take !== undefined && order.length >= read.take);
  return { rows: order.map((r) => rows.get(r.id)!), complete: known };
}

/**
 * PostgreSQL, statuses alone: one statement that seeks `(status, column, id)` past the cursor for each status
 * (a row comparison is one seek there) and orders the union, instead of one statement per status and a third
 * that orders their ids (`status=0,4`: 6 round trips per request → 4, and 51 rows parsed instead of 102).
 */
async function readStatusesAtOnce(db: DbOrTrx, read: PageRead, statuses: number[], take: number): Promise<MailRow[]> {
  const { column } = LIST_SORTS[read.sort];
  const direction = read.descending ? 'desc' : 'asc';
  const past = sql.raw(read.descending ? '<' : '>');
  const seeks = statuses.map((status) => {
    let seek = db
      .selectFrom('mails')
      .selectAll()
      .where(statusTerm([status]));
    if (read.after) seek = seek.where(sql<boolean>`(${sql.ref(column)}, id) ${past} (${read.after.value}, ${read.after.id})`);
    return db.selectFrom(seek.orderBy(column, direction).orderBy('id', direction).limit(take).as('seek')).selectAll();
  });
  const union = seeks.slice(1).reduce((all, seek) => all.unionAll(seek), seeks[0]!);
  const merged = db.selectFrom(union.as('mails')).selectAll() as unknown as MailQuery<MailRow>;
  return sortedPage(merged, 'postgres', { ...read, after: undefined }).execute();
}

/** The page's sort value as `sortedPage` orders it: hidden from the indexes (SQLite `+column`; PostgreSQL an expression). */
function hiddenSortValue(engine: Engine, sort: MailSort): RawBuilder<unknown> {
  const { column, text } = LIST_SORTS[sort];
  return engine === 'sqlite' ? sql`+${sql.ref(column)}` : text ? sql`(${sql.ref(column)} || '')` : sql`(${sql.ref(column)} + 0)`;
}

/** Rows past `position` in the order read (the keyset predicate): compared by the engine, so text keeps its collation. */
function pastPosition(engine: Engine, read: PageRead, position: Position): RawBuilder<boolean> {
  const value = hiddenSortValue(engine, read.sort);
  const past = sql.raw(read.descending ? '<' : '>');
  return sql<boolean>`(${value} ${past} ${position.value} or (${value} = ${position.value} and id ${past} ${position.id}))`;
}

async function readSeek(
  db: DbOrTrx,
  engine: Engine,
  read: PageRead,
  statuses: number[] | undefined,
  bound: number | undefined,
  candidates: number[] | undefined,
): Promise<{ rows: MailRow[]; complete: boolean; frontier?: Position }> {
  const { column, index, statusIndex } = LIST_SORTS[read.sort];
  const direction = read.descending ? 'desc' : 'asc';
  const past = read.descending ? '<' : '>';
  const { search, receivedFrom, receivedTo } = read.filter;
  // Processing alone is read by the leased ids (mail/leases.ts), not through a status index.
  const throughStatus = statuses?.length === 1 && statuses[0] !== MailStatus.Processing;
  const mails = () => mailsThrough(db, engine, statuses === undefined ? index : throughStatus ? statusIndex : undefined);
  const inReceivedOrder = read.sort === 'receivedDate';
  // The candidates are checked on each index entry, which holds the id, before its row is read (`+id`: they must
  // not drive, or SQLite reads them by id and sorts them).
  const candidateTerm = candidates && sql<boolean>`+mails.id in (select value from json_each(${JSON.stringify(candidates)}))`;
  const seek = <O>(q: MailQuery<O>) => {
    let seeking = matching(statuses?.length === 1 ? q.where(statusTerm(statuses)) : q, {
      statuses: statuses && statuses.length > 1 ? statuses : undefined,
      ...(inReceivedOrder ? { receivedFrom, receivedTo } : {}),
    });
    // No mail is updated before its receipt (migration 017): a mail received since `from` sorts at or after it
    // in last-update order, so the seek starts there (ascending) or ends there (descending). The received range
    // is still checked on each row.
    if (read.sort === 'lastUpdate' && receivedFrom !== undefined) seeking = seeking.where('last_update_at', '>=', receivedFrom);
    return candidateTerm ? seeking.where(candidateTerm) : seeking;
  };
  // The terms the seek does not hold, checked on each row it reads.
  const check = <O>(q: MailQuery<O>) => matching(q, { search, ...(inReceivedOrder ? {} : { receivedFrom, receivedTo }) });
  const ordered = <O>(q: MailQuery<O>, byId: boolean) => (byId ? q : q.orderBy(column, direction)).orderBy('id', direction);
  const upTo = <Q extends { limit(n: number): Q }>(q: Q, n: number | undefined) => (n === undefined ? q : q.limit(n));

  /** The seek narrowed by `where`, in order (by id alone where every row shares the value), `need` rows at most. */
  const part = async (where: <O>(q: MailQuery<O>) => MailQuery<O>, byId: boolean, need: number | undefined) => {
    if (bound === undefined) {
      const rows = await upTo(ordered(check(where(seek(mails().selectAll()))), byId), need).execute();
      return { rows, complete: true };
    }
    // The walk reads `bound` entries at most, and the check filters what it read. It carries only the columns
    // the check and the order need: SQLite copies every column it selects out of each of the entries (at 1M
    // mails a walk of 5,000 that found nothing took 9.4 ms with every column, 7.4 with these). The page's rows
    // are read by id after, in the same statement.
    const walk = ordered(where(seek(mails().select([...new Set(['id', column, 'search_text', 'received_at'] as const)]))), byId).limit(
      bound,
    );
    const walked = db.selectFrom(walk.as('mails')).select('mails.id') as unknown as MailQuery<{ id: number }>;
    const matched = upTo(ordered(check(walked), byId), need);
    const rows = await sortedPage(db.selectFrom('mails').selectAll().where('id', 'in', matched), engine, {
      ...read,
      after: undefined,
      take: need,
    }).execute();
    if (need === undefined || rows.length >= need) return { rows, complete: true };
    // Fewer than wanted: the seek ended (complete), or the walk stopped at its bound, at the entry found in the
    // index alone.
    const last = await ordered(where(seek(mails().select([column, 'id']))), byId)
      .limit(1)
      .offset(bound - 1)
      .executeTakeFirst();
    if (!last) return { rows, complete: true };
    return { rows, complete: false, frontier: { value: last[column as keyof typeof last] as SortValue, id: Number(last.id) } };
  };
  const { after } = read;
  if (!after) return part((q) => q, false, read.take);
  // Past (value, id) as two seeks: the rest of the rows sharing `value`, then the rows beyond it. A row
  // comparison `(column, id) < (value, id)` is one seek on PostgreSQL, but SQLite seeks on `column` alone and
  // walks every row sharing the value (all of one status, every mail not sent yet) before the first one past id.
  const same = await part((q) => q.where(column, '=', after.value as never).where('id', past, after.id), true, read.take);
  if (!same.complete || (read.take !== undefined && same.rows.length >= read.take)) return same;
  const rest = read.take === undefined ? undefined : read.take - same.rows.length;
  const beyond = await part((q) => q.where(column, past, after.value as never), false, rest);
  return { ...beyond, rows: [...same.rows, ...beyond.rows] };
}

/**
 * The list of one application (`filter.apiKeyId`): one statement with every term, ordered by the sort's column
 * and id and read past the cursor. In received order (the console's default) the engine walks
 * `(api_key_id, received_at)` (migration 023) from the cursor and stops at the page; any other sort, or a search,
 * is read and sorted by the engine over the application's mails: slower for a large application, exact always.
 * The status sort orders the stored status here (a leased mail sorts among the Queued), as with a search.
 */
export async function readApplicationPage(db: DbOrTrx, read: PageRead): Promise<MailRow[]> {
  const { column } = LIST_SORTS[read.sort];
  const direction = read.descending ? 'desc' : 'asc';
  const past = read.descending ? '<' : '>';
  let q = matching(db.selectFrom('mails').selectAll(), read.filter);
  const after = read.after;
  if (after)
    q = q.where((eb) =>
      eb.or([eb(sql.ref(column), past, after.value), eb.and([eb(sql.ref(column), '=', after.value), eb('id', past, after.id)])]),
    );
  const ordered = q.orderBy(sql.ref(column), direction).orderBy('id', direction);
  return (read.take === undefined ? ordered : ordered.limit(read.take)).execute();
}

/**
 * The status sort as it shows, for a filter of statuses alone: one seek per status in the order read, each in id
 * order from `(status, id)`, until the page is full. A leased mail is stored Queued but shows (and sorts) as
 * Processing (mail/leases.ts): Processing is read through the queue's leases, Queued without them, so a page never
 * walks the index of one status to find the few of another.
 */
export async function readStatusOrderPage(db: DbOrTrx, read: PageRead): Promise<MailRow[]> {
  const order = [...(read.filter.statuses ?? [0, 1, 2, 3, 4, 5])].sort((a, b) => (read.descending ? b - a : a - b));
  const after = read.after;
  const rows: MailRow[] = [];
  for (const status of order) {
    if (after && (read.descending ? status > Number(after.value) : status < Number(after.value))) continue;
    const need = read.take === undefined ? undefined : read.take - rows.length;
    if (need !== undefined && need <= 0) break;
    let q =
      status === MailStatus.Processing
        ? db
            .selectFrom('mail_queue')
            .innerJoin('mails', 'mails.id', 'mail_queue.mail_id')
            .selectAll('mails')
            .where('mail_queue.lease_owner', 'is not', null)
        : db
            .selectFrom('mails')
            .selectAll('mails')
            .where(statusTerm([status]));
    if (after && status === Number(after.value)) q = q.where('mails.id', read.descending ? '<' : '>', after.id);
    q = q.orderBy('mails.id', read.descending ? 'desc' : 'asc');
    rows.push(...(await (need === undefined ? q : q.limit(need)).execute()));
  }
  return rows;
}

/** Plan `gather`: the matches are these ids (the count found them all): read and sorted by the engine. */
export async function readIdsPage(db: DbOrTrx, engine: Engine, read: PageRead, ids: number[]): Promise<MailRow[]> {
  if (ids.length === 0) return [];
  return sortedPage(db.selectFrom('mails').selectAll().where('id', 'in', ids), engine, read).execute();
}

/**
 * Plan `sort` (the walk found no page within its bound): every match read through `source` (SQLite: the
 * search's trigram candidates by id with the other terms fenced, or a seek of the statuses or the date
 * range; PostgreSQL: its choice), and sorted by the engine. A page is sorted as ids only: the engine keeps
 * each match's id and sort value in its sorter, not its whole row, and the page's rows are read by id after.
 */
export async function readSortedPage(
  db: DbOrTrx,
  engine: Engine,
  read: PageRead,
  source: MatchSource,
  trigrams: readonly string[] = [],
): Promise<MailRow[]> {
  const byTrigrams = engine === 'sqlite' && source === 'trigrams' && trigrams.length > 0;
  const matches = <O>(q: MailQuery<O>) => {
    const checked = matching(q, read.filter, byTrigrams, engine === 'postgres');
    if (!byTrigrams) return checked;
    return checked.where('id', 'in', sql<number>`(select rowid from mails_fts where mails_fts match ${trigramMatchQuery(trigrams)})`);
  };
  if (read.take === undefined) return sortedPage(matches(db.selectFrom('mails').selectAll()), engine, read).execute();
  const page = await sortedPage(matches(db.selectFrom('mails').select('id')), engine, read).execute();
  return readRowsInOrder(
    db,
    page.map((r) => Number(r.id)),
  );
}

/** The rows of these ids, in the order given (a page the engine has already sorted). */
async function readRowsInOrder(db: DbOrTrx, ids: number[]): Promise<MailRow[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('mails').selectAll().where('id', 'in', ids).execute();
  const byId = new Map(rows.map((row) => [Number(row.id), row]));
  return ids.map((id) => byId.get(id)!);
}
