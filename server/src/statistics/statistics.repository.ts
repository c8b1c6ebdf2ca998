/**
 * The SQL of the hourly statistics (migration 024): the upsert the one writer makes at the end of a transaction
 * (mail/write/apply.ts, delivery/outcome-commit.ts), the reads of `GET /api/v1/stats`, and the 13-month purge.
 */
import { CompiledQuery } from 'kysely';
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

/** One stored hour of one application (or of all, -1). */
export interface StatisticsHourRow {
  hour: number;
  counters: Record<StatisticsCounter, number>;
  latency: number[];
}

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
  const rows = await db
    .selectFrom('statistics_hourly')
    .select(['hour', ...(VALUE_COLUMNS as Array<'accepted'>)])
    .where('application_id', '=', applicationId)
    .where('hour', '>=', fromHour)
    .where('hour', '<', toHour)
    .orderBy('application_id')
    .orderBy('hour')
    .execute();
  return rows.map((row) => {
    const values = row as unknown as Record<string, number | string>;
    return {
      hour: Number(values.hour),
      counters: Object.fromEntries(STATISTICS_COUNTERS.map((c) => [c, Number(values[c])])) as Record<StatisticsCounter, number>,
      latency: LATENCY_COLUMNS.map((c) => Number(values[c])),
    };
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
