/**
 * The heartbeat rows (migration 008). The table holds one row per running process plus the stale ones of the
 * last hour, so every read takes it whole; no query here grows with the mail tables.
 */
import type { DbOrTrx } from '../store/connection.js';
import type { InstanceRow } from '../store/schema.js';

/** Inserts this process's row or refreshes it: one statement on both engines (ON CONFLICT … DO UPDATE). */
export async function upsertHeartbeat(db: DbOrTrx, row: InstanceRow): Promise<void> {
  await db
    .insertInto('instances')
    .values(row)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({
        roles: row.roles,
        last_heartbeat_at: row.last_heartbeat_at,
        stale_after_ms: row.stale_after_ms,
        in_flight: row.in_flight,
        delivered_last_minute: row.delivered_last_minute,
      }),
    )
    .execute();
}

export async function deleteInstance(db: DbOrTrx, id: string): Promise<void> {
  await db.deleteFrom('instances').where('id', '=', id).execute();
}

/** Rows whose last heartbeat is older than `before`: processes gone without a goodbye, an hour ago. */
export async function deleteSilentSince(db: DbOrTrx, before: number): Promise<number> {
  const result = await db.deleteFrom('instances').where('last_heartbeat_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function listInstances(db: DbOrTrx): Promise<InstanceRow[]> {
  const rows = await db.selectFrom('instances').selectAll().execute();
  // bigint columns arrive as numbers on both engines (store/connection.ts parses int8).
  return rows.map((row) => ({
    ...row,
    pid: Number(row.pid),
    started_at: Number(row.started_at),
    last_heartbeat_at: Number(row.last_heartbeat_at),
    stale_after_ms: Number(row.stale_after_ms),
    in_flight: row.in_flight === null ? null : Number(row.in_flight),
    delivered_last_minute: row.delivered_last_minute === null ? null : Number(row.delivered_last_minute),
  }));
}
