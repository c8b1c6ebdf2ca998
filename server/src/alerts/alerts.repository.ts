/**
 * The SQL of alert rules (migration 013): their state rows and history, the evaluator's lock, and the measures
 * no other repository already reads. Every measure is an index seek or an index range (see each).
 */
import { sql } from 'kysely';
import type { DbOrTrx } from '../store/connection.js';
import type { AlertHistoryTable, AlertStateTable } from '../store/schema.js';
import type { Insertable, Selectable } from 'kysely';

export type AlertStateRow = Selectable<AlertStateTable>;
export type AlertHistoryRow = Selectable<AlertHistoryTable>;

/** The PostgreSQL advisory lock key of the evaluator: "alerts" in ASCII, fixed so every instance agrees. */
export const EVALUATOR_LOCK_KEY = 0x616c65727473;

/**
 * Takes the evaluator's lock for the caller's transaction (PostgreSQL): false when another instance holds it.
 * Transaction-scoped, so it can never outlive the evaluation, even when the connection goes back to the pool.
 */
export async function tryEvaluatorLock(trx: DbOrTrx): Promise<boolean> {
  const result = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${EVALUATOR_LOCK_KEY}::bigint) as locked`.execute(trx);
  return result.rows[0]?.locked === true;
}

const toNumberOrNull = (value: unknown) => (value === null || value === undefined ? null : Number(value));

function stateRow(row: AlertStateRow): AlertStateRow {
  // bigint columns arrive as numbers on both engines (store/connection.ts parses int8); doubles too.
  return {
    ...row,
    since: Number(row.since),
    pending_since: toNumberOrNull(row.pending_since),
    firing_since: toNumberOrNull(row.firing_since),
    resolved_at: toNumberOrNull(row.resolved_at),
    value: toNumberOrNull(row.value),
    threshold: Number(row.threshold),
    evaluated_at: Number(row.evaluated_at),
    firings: Number(row.firings),
  };
}

export async function listAlertStates(db: DbOrTrx): Promise<AlertStateRow[]> {
  return (await db.selectFrom('alert_states').selectAll().execute()).map(stateRow);
}

export async function upsertAlertState(db: DbOrTrx, row: AlertStateRow): Promise<void> {
  const { rule: _rule, ...rest } = row;
  await db
    .insertInto('alert_states')
    .values(row)
    .onConflict((oc) => oc.column('rule').doUpdateSet(rest))
    .execute();
}

export async function insertAlertHistory(db: DbOrTrx, rows: Insertable<AlertHistoryTable>[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('alert_history').values(rows).execute();
}

/** The newest transitions first, by the (at, id) index. */
export async function listAlertHistory(db: DbOrTrx, limit: number): Promise<AlertHistoryRow[]> {
  const rows = await db.selectFrom('alert_history').selectAll().orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map((row) => ({
    ...row,
    id: Number(row.id),
    at: Number(row.at),
    value: toNumberOrNull(row.value),
    threshold: Number(row.threshold),
  }));
}

/** The earliest due time among waiting mails already due: one seek on the claim's index of the queue (migration 022). */
export async function findEarliestDue(db: DbOrTrx, now: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('mail_queue')
    .select('due_at')
    .where('lease_owner', 'is', null)
    .where('due_at', '<=', now)
    .orderBy('due_at')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.due_at);
}

/**
 * Bounce reports matched to a mail and received since `since`: DSNs (bounces) and ARF reports (complaints), by
 * the (received_at, id) index. Until the bounce listener lands nothing writes the table and this stays 0.
 */
export async function countMatchedBounceReports(db: DbOrTrx, since: number): Promise<number> {
  const row = await db
    .selectFrom('bounce_reports')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('received_at', '>=', since)
    .where('kind', 'in', ['dsn', 'arf'])
    .where('mail_id', 'is not', null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
