import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * Applications managed by operators (docs/api.md#managing-applications-apiv1applications): an API key is an
 * application, and `api_keys` gains what the console shows and what a rotation needs.
 *
 * - `created_by`: who made it (`operator:NAME`, `cli`); null for keys made before this migration.
 * - `last_used_at`: when a request last authenticated with it, written at most once a minute per key
 *   (auth/auth.service.ts), never on every submission.
 * - `previous_key_hash`, `previous_key_expires_at`: a rotation's old key, accepted until then. Unique like
 *   `key_hash` (a lookup by it is one seek); both engines let the unique index hold any number of nulls.
 * - `mails_api_key_received_idx (api_key_id, received_at)`: an application's mails of the last 24 hours are
 *   counted on this index alone, up to a cap (applications/application.repository.ts), never by walking mails.
 *   `(api_key_id, id)` (010) cannot bound by time, and `(received_at, id)` would walk every application's mail.
 */
export function applications(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('api_keys').addColumn('created_by', 'text').execute();
      await db.schema.alterTable('api_keys').addColumn('last_used_at', 'bigint').execute();
      await db.schema.alterTable('api_keys').addColumn('previous_key_hash', 'text').execute();
      await db.schema.alterTable('api_keys').addColumn('previous_key_expires_at', 'bigint').execute();
      await db.schema.createIndex('api_keys_previous_key_hash_idx').on('api_keys').column('previous_key_hash').unique().execute();
      await db.schema.createIndex('mails_api_key_received_idx').on('mails').columns(['api_key_id', 'received_at']).execute();
      // As in 014: on SQLite a new index without statistics would look the most selective for any query.
      if (engine === 'sqlite') await sql`analyze mails_api_key_received_idx`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('mails_api_key_received_idx').execute();
      await db.schema.dropIndex('api_keys_previous_key_hash_idx').execute();
      for (const column of ['previous_key_expires_at', 'previous_key_hash', 'last_used_at', 'created_by'])
        await db.schema.alterTable('api_keys').dropColumn(column).execute();
    },
  };
}
