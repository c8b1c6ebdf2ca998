/**
 * The SQL of the hourly statistics (migration 024): the upsert the one writer makes at the end of a transaction
 * (mail/write/apply.ts, delivery/outcome-commit.ts), the reads of `GET /api/v1/stats`, and the 13-month purge.
 */
import { CompiledQuery, sql } from 'kysely';
import { LATENCY_BUCKET_COUNT, STATISTICS_COUNTERS, type StatisticsCounter } from '@outbox/contract';
import { PREPARED, type DbOrTrx } from '../store/connection.js';
import { engineOf } from '../store/statement-batch.js';
import { sortedStatisticsMoves, type StatisticsMoves } from './statistics-moves.js';

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

/** One stored hour of one application (or of all, -1): the eight counters (STATISTICS_COUNTERS' order), then the latency buckets. */
export interface StatisticsHourRow {
  hour: number;
  values: number[];
}

/** Where each counter and latency bucket sits in `StatisticsHourRow.values`. */
export const COUNTER_INDEX = Object.fromEntries(STATISTICS_COUNTERS.map((c, i) => [c, i])) as Record<StatisticsCounter, number>;
export const LATENCY_OFFSET = STATISTICS_COUNTERS.length;

/**
 * The values of a row as one JSON array: better-sqlite3 builds an object of 30 properties per row slowly (720 rows:
 * ~9 ms against ~2 ms for the array, bench/stats.ts), and PostgreSQL's driver parses json itself. The engines
 * spell it differently; this is the one place.
 */
const valuesArray = (engine: 'sqlite' | 'postgres') =>
  sql.raw(`${engine === 'postgres' ? 'json_build_array' : 'json_array'}(${VALUE_COLUMNS.join(', ')})`);

/**
 * The hours of one application (an API key's id, 0 for none, -1 for all together) in [fromHour, toHour), oldest
 * first: a range of the unique (application_id, hour) index, one row per hour that counted anything.
 */
export async function listStatisticsHours(
  db: DbOrTrx,
  applicationId: number,
  fromHour: number,
  toHour: number,
): Promise<StatisticsHourRow[]> {
  const { rows } = await sql<{ hour: number | string; v: string | unknown[] }>`
    select hour, ${valuesArray(engineOf(db))} as v from statistics_hourly
    where application_id = ${applicationId} and hour >= ${fromHour} and hour < ${toHour}
    order by application_id, hour`.execute(db);
  return rows.map((row) => {
    const values = (typeof row.v === 'string' ? JSON.parse(row.v) : row.v) as unknown[];
    return { hour: Number(row.hour), values: values.map(Number) };
  });
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
