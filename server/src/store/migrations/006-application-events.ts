import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

// Migrations must not depend on the current Database type, which changes as the schema evolves.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The applications' events: a transactional outbox. Every committed transition writes
 * its event row in the same transaction, so an event exists exactly when its change does; webhook delivery
 * reads them afterwards.
 *
 * - `seq`: global order of insertion (identity). Not a dispatch cursor: on PostgreSQL a lower seq may commit
 *   after a higher one, so readers select by `fanned_out_at is null` (partial index), never `seq > last`.
 * - `id`: the event's stable public id (`evt_…`), the `webhook-id` of every delivery attempt of it.
 * - `mail_id`, `mail_seq`: the mail and the event's place in that mail's history (1, 2, …); no foreign key,
 *   so a `mail.deleted` event outlives its mail. Null for events about no mail (`alert.*`).
 * - `api_key_id`: the application (API key) whose mail it is; null for operator-made mails and alerts.
 * - `payload`: the JSON `data` object as receivers get it.
 * - `fanned_out_at`: set once the webhook dispatcher has created the deliveries for it.
 * - `mails.event_seq`: the mail's last `mail_seq`, advanced by the same UPDATE that moves the mail, so the next
 *   number needs no read (and two transitions of one mail serialise on its row).
 */
export function applicationEvents(engine: Engine): Migration {
  return {
    async up(db: AnyDb) {
      await (
        engine === 'sqlite'
          ? db.schema.createTable('application_events').addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement())
          : db.schema.createTable('application_events').addColumn('seq', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
      )
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('mail_id', 'bigint')
        .addColumn('mail_seq', 'integer')
        .addColumn('api_key_id', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('fanned_out_at', 'bigint')
        .execute();
      await db.schema.createIndex('application_events_mail_idx').on('application_events').columns(['mail_id', 'mail_seq']).execute();
      await db.schema.createIndex('application_events_created_idx').on('application_events').columns(['created_at']).execute();
      await db.schema
        .createIndex('application_events_pending_idx')
        .on('application_events')
        .column('seq')
        .where(sql.ref('fanned_out_at'), 'is', null)
        .execute();
      await db.schema
        .alterTable('mails')
        .addColumn('event_seq', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
    async down(db: AnyDb) {
      await db.schema.dropTable('application_events').execute();
      await db.schema.alterTable('mails').dropColumn('event_seq').execute();
    },
  };
}
