import type { Kysely, Migration } from 'kysely';

/**
 * Heartbeats of running processes (docs/operations.md#instances-and-heartbeats). One row per
 * process start, rewritten every HEARTBEAT_INTERVAL (5 s), deleted at a graceful stop, and deleted by any
 * instance once its last heartbeat is an hour old. The table holds a handful of rows, so it needs no index
 * beyond its key: every read takes it whole.
 *
 * - roles: comma-separated (api, worker, smtp, bounce), the same on both engines.
 * - stale_after_ms: chosen by the writer (INSTANCE_STALE_AFTER), so readers need no setting of their own and a
 *   fleet with a shortened interval is judged by its own rule.
 * - in_flight, delivered_last_minute: a worker's load at its last heartbeat; null for a process without one.
 */
export function instancesTable(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('instances')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('host', 'text', (c) => c.notNull())
        .addColumn('pid', 'integer', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('roles', 'text', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('last_heartbeat_at', 'bigint', (c) => c.notNull())
        .addColumn('stale_after_ms', 'integer', (c) => c.notNull())
        .addColumn('in_flight', 'integer')
        .addColumn('delivered_last_minute', 'integer')
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('instances').ifExists().execute();
    },
  };
}
