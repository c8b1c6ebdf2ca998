import type { Kysely, Migration } from 'kysely';

/**
 * Relay health as each worker process sees it (docs/relays.md#health): one row per process and
 * relay it sends through (the default relay is `default`), written at once when a relay's state changes and with the
 * process's heartbeat (every HEARTBEAT_INTERVAL). `GET /api/v1/relays/health` folds the rows of live instances into
 * one line per relay (relays/relay-health.ts).
 *
 * - `instance_id` references `instances`: a process's rows go with its heartbeat row, at a graceful stop or when any
 *   instance forgets a process silent for an hour; until then readers skip the rows of a stale instance.
 * - `relay` is the relay's name, not its id: the default relay has none, and a renamed relay is reported under its
 *   new name from the next write on (its rows are rewritten whole).
 * - `state`: up, throttled, down or idle; `since`, `last_error_at`: epoch ms; `rate_per_second`: the rate the process
 *   paces it at now (null: unpaced); `sent_today`: what it took this UTC day in that process.
 *
 * A handful of rows per process, read whole; no index beyond the key. Not exported (store/transfer.ts), like the
 * heartbeats it belongs to.
 */
export function relayHealth(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('relay_health')
        .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
        .addColumn('relay', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('since', 'bigint')
        .addColumn('rate_per_second', 'double precision')
        .addColumn('max_per_second', 'integer')
        .addColumn('sent_today', 'integer', (c) => c.notNull())
        .addColumn('max_per_day', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('last_error_at', 'bigint')
        .addColumn('latency_ms', 'double precision')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('relay_health_pkey', ['instance_id', 'relay'])
        .execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('relay_health').ifExists().execute();
    },
  };
}
