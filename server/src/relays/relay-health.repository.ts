/**
 * The SQL of relay health (migration 030, docs/relays.md#health): each worker process rewrites its own rows, and
 * readers take the rows with their instance's heartbeat, to skip those of stale instances. The table holds a few rows
 * per running process, so reads take it whole.
 */
import type { DbOrTrx } from '../store/connection.js';
import type { RelayHealthRow } from '../store/schema.js';
import type { RelayReport } from './relay-health.js';

const toNumberOrNull = (value: unknown) => (value === null || value === undefined ? null : Number(value));

/**
 * Makes `instanceId`'s rows what `reports` say: one upsert of them all, then the rows of relays it no longer reports
 * (renamed, or no longer on a route) deleted. An upsert, not a delete and insert, so that a write racing another one
 * of the same process on PostgreSQL never trips over the key.
 */
export async function writeInstanceReports(db: DbOrTrx, instanceId: string, reports: readonly RelayReport[], now: number): Promise<void> {
  if (reports.length > 0) {
    await db
      .insertInto('relay_health')
      .values(
        reports.map((report) => ({
          instance_id: instanceId,
          relay: report.relay,
          state: report.state,
          since: report.since,
          rate_per_second: report.ratePerSecond,
          max_per_second: report.maxPerSecond,
          sent_today: report.sentToday,
          max_per_day: report.maxPerDay,
          last_error: report.lastError,
          last_error_at: report.lastErrorAt,
          latency_ms: report.latencyMs,
          updated_at: now,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['instance_id', 'relay']).doUpdateSet((eb) => ({
          state: eb.ref('excluded.state'),
          since: eb.ref('excluded.since'),
          rate_per_second: eb.ref('excluded.rate_per_second'),
          max_per_second: eb.ref('excluded.max_per_second'),
          sent_today: eb.ref('excluded.sent_today'),
          max_per_day: eb.ref('excluded.max_per_day'),
          last_error: eb.ref('excluded.last_error'),
          last_error_at: eb.ref('excluded.last_error_at'),
          latency_ms: eb.ref('excluded.latency_ms'),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      )
      .execute();
  }
  let gone = db.deleteFrom('relay_health').where('instance_id', '=', instanceId);
  if (reports.length > 0)
    gone = gone.where(
      'relay',
      'not in',
      reports.map((report) => report.relay),
    );
  await gone.execute();
}

/** A report row with its instance's heartbeat, for the reader's liveness check (instances/instance.service.ts). */
export interface ReportRow extends RelayHealthRow {
  last_heartbeat_at: number;
  stale_after_ms: number;
}

/** Every report with its instance's last heartbeat and stale threshold. */
export async function listReportRows(db: DbOrTrx): Promise<ReportRow[]> {
  const rows = await db
    .selectFrom('relay_health')
    .innerJoin('instances', 'instances.id', 'relay_health.instance_id')
    .selectAll('relay_health')
    .select(['instances.last_heartbeat_at', 'instances.stale_after_ms'])
    .execute();
  // bigint columns arrive as numbers on both engines (store/connection.ts parses int8); doubles too.
  return rows.map((row) => ({
    ...row,
    since: toNumberOrNull(row.since),
    rate_per_second: toNumberOrNull(row.rate_per_second),
    max_per_second: toNumberOrNull(row.max_per_second),
    sent_today: Number(row.sent_today),
    max_per_day: toNumberOrNull(row.max_per_day),
    last_error_at: toNumberOrNull(row.last_error_at),
    latency_ms: toNumberOrNull(row.latency_ms),
    updated_at: Number(row.updated_at),
    last_heartbeat_at: Number(row.last_heartbeat_at),
    stale_after_ms: Number(row.stale_after_ms),
  }));
}
