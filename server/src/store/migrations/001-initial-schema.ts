import { type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * Where the two engines must differ in DDL, they differ here: the auto-increment id and the binary type.
 * Everything else is the same schema builder code.
 */
// Migrations must not depend on the current Database type, which changes as the schema evolves.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

function withId<T extends string>(engine: Engine, table: CreateTableBuilder<T, never>) {
  return engine === 'sqlite'
    ? table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    : table.addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity());
}

export function initialSchema(engine: Engine): Migration {
  const binary = engine === 'sqlite' ? 'blob' : 'bytea';
  return {
    async up(db: AnyDb) {
      await withId(engine, db.schema.createTable('mails'))
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('from_name', 'text', (c) => c.notNull())
        .addColumn('from_mail', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('search_text', 'text', (c) => c.notNull())
        .addColumn('received_at', 'bigint', (c) => c.notNull())
        .addColumn('last_update_at', 'bigint', (c) => c.notNull())
        .addColumn('provider_sent_at', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', 'bigint')
        .addColumn('provider_reply', 'text')
        .addColumn('api_key_id', 'bigint')
        .addColumn('idempotency_key', 'text')
        .execute();
      // One index per list sort (keyset: sort column, then id) and the queue's own.
      await db.schema.createIndex('mails_received_idx').on('mails').columns(['received_at', 'id']).execute();
      await db.schema.createIndex('mails_last_update_idx').on('mails').columns(['last_update_at', 'id']).execute();
      await db.schema.createIndex('mails_provider_sent_idx').on('mails').columns(['provider_sent_at', 'id']).execute();
      await db.schema.createIndex('mails_subject_idx').on('mails').columns(['subject', 'id']).execute();
      await db.schema.createIndex('mails_from_idx').on('mails').columns(['from_mail', 'id']).execute();
      await db.schema.createIndex('mails_status_received_idx').on('mails').columns(['status', 'received_at', 'id']).execute();
      await db.schema.createIndex('mails_queue_idx').on('mails').columns(['status', 'next_attempt_at']).execute();
      await db.schema.createIndex('mails_lease_idx').on('mails').columns(['status', 'lease_expires_at']).execute();
      await db.schema.createIndex('mails_idempotency_idx').on('mails').columns(['api_key_id', 'idempotency_key']).unique().execute();

      await withId(engine, db.schema.createTable('mail_recipients'))
        .addColumn('mail_id', 'bigint', (c) => c.notNull().references('mails.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('address', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('mail_recipients_mail_idx').on('mail_recipients').columns(['mail_id', 'kind', 'position']).execute();

      await db.schema
        .createTable('mail_contents')
        .addColumn('mail_id', 'bigint', (c) => c.primaryKey().references('mails.id').onDelete('cascade'))
        .addColumn('raw', binary)
        .addColumn('text_body', 'text')
        .addColumn('html_body', 'text')
        .addColumn('headers_json', 'text')
        .addColumn('envelope_from', 'text', (c) => c.notNull())
        .addColumn('size_bytes', 'integer', (c) => c.notNull())
        .execute();

      await withId(engine, db.schema.createTable('mail_events'))
        .addColumn('mail_id', 'bigint', (c) => c.notNull().references('mails.id').onDelete('cascade'))
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('from_status', 'integer')
        .addColumn('to_status', 'integer')
        .addColumn('detail', 'text')
        .execute();
      await db.schema.createIndex('mail_events_mail_idx').on('mail_events').columns(['mail_id', 'id']).execute();

      await db.schema
        .createTable('status_counts')
        .addColumn('status', 'integer', (c) => c.primaryKey())
        .addColumn('count', 'bigint', (c) => c.notNull())
        .execute();
      await db
        .insertInto('status_counts')
        .values([0, 1, 2, 3, 4, 5].map((status) => ({ status, count: 0 })))
        .execute();

      await withId(engine, db.schema.createTable('operators'))
        .addColumn('username', 'text', (c) => c.notNull().unique())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('operator_id', 'bigint', (c) => c.notNull().references('operators.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('sessions_operator_idx').on('sessions').columns(['operator_id']).execute();
      await db.schema.createIndex('sessions_expires_idx').on('sessions').columns(['expires_at']).execute();

      await withId(engine, db.schema.createTable('api_keys'))
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .execute();

      await withId(engine, db.schema.createTable('audit_log'))
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('target', 'text')
        .addColumn('before_json', 'text')
        .addColumn('after_json', 'text')
        .execute();
      await db.schema.createIndex('audit_log_at_idx').on('audit_log').columns(['at']).execute();
    },
    async down(db: AnyDb) {
      for (const table of [
        'audit_log',
        'api_keys',
        'sessions',
        'operators',
        'status_counts',
        'mail_events',
        'mail_contents',
        'mail_recipients',
        'mails',
      ]) {
        await db.schema.dropTable(table).ifExists().execute();
      }
    },
  };
}
