import { type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
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
 * Named relays and routes (docs/relays.md).
 *
 * - `relays`: one provider each. `url` never holds credentials (the service takes them out of a URL it is given);
 *   `tls` is RELAY_TLS's policy for this relay (`require`, `opportunistic`, `off`). `max_per_second` and
 *   `max_per_day` null: no limit.
 * - `relay_credentials`: the login, apart from the URL so that a read of `relays` (the API, the console, the audit
 *   log) can never show it. Not exported (store/transfer.ts): an export never holds a relay's password in plain text.
 * - `routes`: the ordered rules, `position` from 0. A null match field matches anything; `sender_domain` and
 *   `recipient_domain` are a domain or `*.domain` (any subdomain). `relay_ids` is the JSON array of the relays
 *   tried in order (the primary first); 0 names the default relay (RELAY_URL).
 */
export function relays(engine: Engine): Migration {
  return {
    async up(db: AnyDb) {
      await withId(engine, db.schema.createTable('relays'))
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('tls', 'text', (c) => c.notNull())
        .addColumn('max_connections', 'integer', (c) => c.notNull())
        .addColumn('max_per_second', 'integer')
        .addColumn('max_per_day', 'integer')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('relay_credentials')
        .addColumn('relay_id', 'bigint', (c) => c.primaryKey().references('relays.id').onDelete('cascade'))
        .addColumn('username', 'text', (c) => c.notNull())
        .addColumn('password', 'text', (c) => c.notNull())
        .execute();
      await withId(engine, db.schema.createTable('routes'))
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('api_key_id', 'bigint')
        .addColumn('sender_domain', 'text')
        .addColumn('recipient_domain', 'text')
        .addColumn('lane', 'integer')
        .addColumn('relay_ids', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
    async down(db: AnyDb) {
      await db.schema.dropTable('routes').execute();
      await db.schema.dropTable('relay_credentials').execute();
      await db.schema.dropTable('relays').execute();
    },
  };
}
