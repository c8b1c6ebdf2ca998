import { sql, type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

// Migrations must not depend on the current Database type, which changes as the schema evolves.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

function withId<T extends string>(engine: Engine, table: CreateTableBuilder<T, never>) {
  return engine === 'sqlite'
    ? table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    : table.addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity());
}

/**
 * Webhook endpoints, their deliveries and every attempt (docs/webhooks.md).
 *
 * - `webhook_endpoints`: `event_types` is a JSON array (empty: every type); `api_key_id` null means every
 *   application. `secret` is kept as given out (`whsec_…`): the receiver checks HMACs with the same key, so it
 *   cannot be stored hashed. `previous_secret` signs beside it until `previous_secret_expires_at` (rotation).
 *   `failing_since`: the first failed attempt since the last success (5 days of it disables the endpoint).
 * - `webhook_deliveries`: one per (endpoint, application event), made by the fan-out. The event's body is read
 *   from `application_events` by `event_seq`; `event_id`, `event_type` and `mail_id` are copied for the logs'
 *   filters. `step` counts attempts of the current round of the retry schedule (a replay starts a new round).
 *   `next_attempt_at` is when it is due, null once succeeded or failed; a claim sets it to the lease's end and
 *   `lease_owner` to the claim, so a dispatcher that dies returns its deliveries by simply letting the lease
 *   run out (no sweeper).
 * - `webhook_attempts`: every HTTP attempt, kept RETENTION_DAYS.
 */
export function webhooks(engine: Engine): Migration {
  return {
    async up(db: AnyDb) {
      await withId(engine, db.schema.createTable('webhook_endpoints'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('event_types', 'text', (c) => c.notNull())
        .addColumn('api_key_id', 'bigint')
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('disabled_reason', 'text')
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('previous_secret', 'text')
        .addColumn('previous_secret_expires_at', 'bigint')
        .addColumn('failing_since', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();

      await withId(engine, db.schema.createTable('webhook_deliveries'))
        .addColumn('endpoint_id', 'bigint', (c) => c.notNull())
        .addColumn('event_seq', 'bigint', (c) => c.notNull())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('mail_id', 'bigint')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('step', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint')
        .addColumn('lease_owner', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('webhook_deliveries_endpoint_event_unique', ['endpoint_id', 'event_seq'])
        .execute();
      // The claim: due deliveries, earliest first; finished ones (null) are not in the index at all.
      await db.schema
        .createIndex('webhook_deliveries_due_idx')
        .on('webhook_deliveries')
        .column('next_attempt_at')
        .where(sql.ref('next_attempt_at'), 'is not', null)
        .execute();
      await db.schema.createIndex('webhook_deliveries_endpoint_idx').on('webhook_deliveries').columns(['endpoint_id', 'id']).execute();
      await db.schema
        .createIndex('webhook_deliveries_mail_idx')
        .on('webhook_deliveries')
        .column('mail_id')
        .where(sql.ref('mail_id'), 'is not', null)
        .execute();
      await db.schema.createIndex('webhook_deliveries_event_idx').on('webhook_deliveries').column('event_id').execute();
      await db.schema.createIndex('webhook_deliveries_updated_idx').on('webhook_deliveries').column('updated_at').execute();

      await withId(engine, db.schema.createTable('webhook_attempts'))
        .addColumn('delivery_id', 'bigint', (c) => c.notNull())
        .addColumn('endpoint_id', 'bigint', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('http_status', 'integer')
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('succeeded', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhook_attempts_delivery_idx').on('webhook_attempts').columns(['delivery_id', 'id']).execute();
      await db.schema.createIndex('webhook_attempts_endpoint_at_idx').on('webhook_attempts').columns(['endpoint_id', 'at']).execute();
      await db.schema.createIndex('webhook_attempts_at_idx').on('webhook_attempts').column('at').execute();
    },
    async down(db: AnyDb) {
      for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) await db.schema.dropTable(table).execute();
    },
  };
}
