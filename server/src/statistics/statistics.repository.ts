/**
 * The SQL of the hourly statistics (migration 024): the upsert the one writer makes at the end of a transaction
 * (mail/write/apply.ts, delivery/outcome-commit.ts), the reads of `GET /api/v1/stats`, and the 13-month purge.
 */
import { CompiledQuery, sql } from 'kysely';
import { LATENCY_BUCKET_COUNT, STATISTICS_COUNTERS, type StatisticsCounter } from '@outbox/contract';
import { PREPARED, type DbOrTrx } from '../store/connection.js';
import { engineOf } from '../store/statement-batch.js';
import { HOUR_MS, sortedStatisticsMoves, type StatisticsMoves } from './statistics-moves.js';

const LATENCY_COLUMNS = Array.from({ length: LATENCY_BUCKET_COUNT }, (_, i) => `latency_${String(i).padStart(2, '0')}`);
const VALUE_COLUMNS = [...STATISTICS_COUNTERS, ...LATENCY_COLUMNS];
const COLUMNS = ['application_id', 'hour', ...VALUE_COLUMNS];
const ADD_EXCLUDED = (table: string) => VALUE_COLUMNS.map((c) => `${c} = ${table}${c} + excluded.${c}`).join(', ');

/** PostgreSQL: one array per column, rows in the order given (`with ordinality`); one text for any number of rows. */
const POSTGRES_UPSERT = `${PREPARED} insert into statistics_hourly (${COLUMNS.join(', ')})
  select ${COLUMNS.map((c) => `v.${c}`).join(', ')}
  from unnest(${COLUMNS.map((_, i) => `$${i + 1}::bigint[]`).join(', ')}) with ordinality as v (${COLUMNS.join(', ')}, n)
  order by v.n
  on conflict (application_id, hour) do update set ${ADD_EXCLUDED('statistics_hourly.')}`;
/** SQLite texts, one per row count (a transaction writes a handful of rows). */
const sqliteTexts = new Map<number, string>();

/**
 * Adds a transaction's moves to their (application, hour) rows: one statement whatever their number. Make it the last
 * write of the transaction, after the status counters: these rows are a hot spot like those (every writer of the same
 * hour meets on the row of all applications), so they are locked last, in (application, hour) order, for the commit
 * only; and as every writer takes the status counters first and these after, no two transactions wait on each other
 * in a circle.
 */
export async function writeStatistics(db: DbOrTrx, moves: StatisticsMoves): Promise<void> {
  if (moves.size === 0) return;
  const rows = sortedStatisticsMoves(moves).map((m) => [
    m.applicationId,
    m.hour,
    ...STATISTICS_COUNTERS.map((c) => m.counters[c]),
    ...m.latency,
  ]);
  if (engineOf(db) === 'postgres') {
    await db.executeQuery(
      CompiledQuery.raw(
        POSTGRES_UPSERT,
        COLUMNS.map((_, column) => rows.map((row) => row[column]!)),
      ),
    );
    return;
  }
  let text = sqliteTexts.get(rows.length);
  if (text === undefined) {
    const tuple = `(${COLUMNS.map(() => '?').join(', ')})`;
    text = `insert into statistics_hourly (${COLUMNS.join(', ')}) values ${Array.from({ length: rows.length }, () => tuple).join(', ')}
      on conflict (application_id, hour) do update set ${ADD_EXCLUDED('')}`;
    if (sqliteTexts.size >= 100) sqliteTexts.clear();
    sqliteTexts.set(rows.length, text);
  }
  await db.executeQuery(CompiledQuery.raw(text, rows.flat()));
}

/** One bucket of one application (or of all, -1): its start, then the eight counters (STATISTICS_COUNTERS' order) and the latency buckets, summed over its hours. */
export interface StatisticsBucketRow {
  start: number;
  values: number[];
}

/** Where each counter and latency bucket sits in `StatisticsBucketRow.values`. */
export const COUNTER_INDEX = Object.fromEntries(STATISTICS_COUNTERS.map((c, i) => [c, i])) as Record<StatisticsCounter, number>;
export const LATENCY_OFFSET = STATISTICS_COUNTERS.length;

/**
 * The buckets of one application (an API key's id, 0 for none, -1 for all together) in [fromHour, toHour), oldest
 * first, each the sum of its stored hours (`bucketMs`: an hour, or a UTC day), only those that counted anything: a
 * range of the unique (application_id, hour) index. The engine sums a day's hours itself and answers every bucket in
 * one JSON document, `[[start, ...values], ...]`, parsed once: a row per hour cost a row object and a parse each (720
 * for 30 days; better-sqlite3 builds an object of 30 properties slowly), and a daily answer read 24 times the rows
 * it needed (bench/stats.ts). The engines spell it differently; this is the one place.
 */
export async function listStatisticsBuckets(
  db: DbOrTrx,
  applicationId: number,
  fromHour: number,
  toHour: number,
  bucketMs: number,
): Promise<StatisticsBucketRow[]> {
  const postgres = engineOf(db) === 'postgres';
  const hourly = bucketMs === HOUR_MS;
  // A bucket's start: the hour itself, or the hours' common start (bucketMs is a whole number of hours; integer
  // division on both engines, as `hour` is an integer).
  const start = hourly ? sql.raw('hour') : sql.raw(`hour / ${Number(bucketMs)} * ${Number(bucketMs)}`);
  const array = `${postgres ? 'json_build_array' : 'json_array'}(b, ${VALUE_COLUMNS.join(', ')})`;
  // In no particular order: the rows are sorted below, where sorting rows that came in order costs nothing (an
  // ORDER BY in the aggregate sorted them again in the store: SQLite's plan showed a temporary B-tree for it).
  const aggregate = sql.raw(postgres ? `json_agg(${array})` : `json_group_array(${array})`);
  const { rows } = await sql<{ v: string | unknown[] | null }>`
    select ${aggregate} as v from (
      select ${start} as b, ${sql.raw(hourly ? VALUE_COLUMNS.join(', ') : VALUE_COLUMNS.map((c) => `sum(${c}) as ${c}`).join(', '))}
      from statistics_hourly
      where application_id = ${applicationId} and hour >= ${fromHour} and hour < ${toHour}
      ${hourly ? sql`` : sql`group by b`}
    ) buckets`.execute(db);
  const document = rows[0]?.v ?? null;
  if (document === null) return []; // json_agg of no rows
  // JSON numbers, exact: a counter stays far below 2^53.
  const buckets = (typeof document === 'string' ? JSON.parse(document) : document) as number[][];
  return buckets.map((bucket) => ({ start: bucket[0]!, values: bucket.slice(1) })).sort((a, b) => a.start - b.start);
}

/**
 * Each application's sums over [fromHour, toHour) (the row of all, -1, left out), with its API key's name: one
 * grouped read of the range through the (hour) index, where a read per application cost a request each (the
 * console's applications table asked 100 times for 100 applications).
 */
export async function listApplicationSums(
  db: DbOrTrx,
  fromHour: number,
  toHour: number,
): Promise<Array<{ applicationId: number; name: string | null; values: number[] }>> {
  const sums = sql.raw(VALUE_COLUMNS.map((c) => `sum(s.${c}) as ${c}`).join(', '));
  const { rows } = await sql<Record<string, number | string | null>>`
    select s.application_id, k.name, ${sums}
    from statistics_hourly s left join api_keys k on k.id = s.application_id
    where s.hour >= ${fromHour} and s.hour < ${toHour} and s.application_id >= 0
    group by s.application_id, k.name`.execute(db);
  return rows.map((row) => ({
    applicationId: Number(row.application_id),
    name: row.name === null || row.name === undefined ? null : String(row.name),
    values: VALUE_COLUMNS.map((c) => Number(row[c] ?? 0)),
  }));
}

/** The API key's name, or undefined when no key has that id (any more). */
export async function findApplicationName(db: DbOrTrx, apiKeyId: number): Promise<string | undefined> {
  const row = await db.selectFrom('api_keys').select('name').where('id', '=', apiKeyId).executeTakeFirst();
  return row?.name;
}

/** Rows deleted per statement by the purge. */
const PURGE_CHUNK = 5_000;

/** Deletes the hours before `beforeHour`, in chunks by the (hour) index; returns how many rows went. */
export async function deleteStatisticsBefore(db: DbOrTrx, beforeHour: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await db
      .deleteFrom('statistics_hourly')
      .where('id', 'in', (eb) => eb.selectFrom('statistics_hourly').select('id').where('hour', '<', beforeHour).limit(PURGE_CHUNK))
      .executeTakeFirst();
    const n = Number(result.numDeletedRows);
    deleted += n;
    if (n < PURGE_CHUNK) return deleted;
  }
}
