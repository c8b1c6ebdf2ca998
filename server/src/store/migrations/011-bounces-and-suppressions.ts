import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connection.js';

// Migrations must not depend on the current Database type, which changes as the schema evolves.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * What comes back after the relay's 250, and who is not sent to again.
 *
 * - `server_secrets`: named secrets kept in the store, so every instance shares them (the return path's HMAC key
 *   `return-path`); created on first use.
 * - `bounce_reports`: every report the bounce listener accepted, matched or not, with its raw bytes (≤ 1 MiB), so
 *   none is lost: `kind` dsn | arf | unknown, `mail_id` null while unmatched, `summary` JSON of the parsed
 *   per-recipient fields.
 * - `suppressions`: one row per address (lower-cased), with why (`hard_bounce`, `rcpt_refused`, `complaint`,
 *   `manual`), the mail that caused it, who added it, an optional note and expiry.
 */
export function bouncesAndSuppressions(engine: Engine): Migration {
  const binary = engine === 'sqlite' ? 'blob' : 'bytea';
  const withId = (name: string) =>
    engine === 'sqlite'
      ? (db: AnyDb) => db.schema.createTable(name).addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      : (db: AnyDb) => db.schema.createTable(name).addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity());
  return {
    async up(db: AnyDb) {
      await db.schema
        .createTable('server_secrets')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await withId('bounce_reports')(db)
        .addColumn('received_at', 'bigint', (c) => c.notNull())
        .addColumn('envelope_from', 'text', (c) => c.notNull())
        .addColumn('envelope_to', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('mail_id', 'bigint')
        .addColumn('matched_by', 'text')
        .addColumn('summary', 'text', (c) => c.notNull())
        .addColumn('raw', binary, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('bounce_reports_received_idx').on('bounce_reports').columns(['received_at', 'id']).execute();
      await db.schema.createIndex('bounce_reports_mail_idx').on('bounce_reports').columns(['mail_id']).execute();

      await withId('suppressions')(db)
        .addColumn('address', 'text', (c) => c.notNull().unique())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('mail_id', 'bigint')
        .addColumn('detail', 'text')
        .addColumn('note', 'text')
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .execute();
      await db.schema.createIndex('suppressions_created_idx').on('suppressions').columns(['created_at', 'id']).execute();
    },
    async down(db: AnyDb) {
      for (const table of ['suppressions', 'bounce_reports', 'server_secrets']) await db.schema.dropTable(table).ifExists().execute();
    },
  };
}
