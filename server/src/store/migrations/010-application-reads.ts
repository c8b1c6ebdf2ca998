import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Reads of an application's own mails (`mail/application-reads.repository.ts`):
 * - (api_key_id, id): an API key's list, newest first, keyset on id; without it the list would walk every
 *   mail of every key. (The unique (api_key_id, idempotency_key) index cannot order by id.)
 * - (message_id): `messageId=`, for applications and operators alike, one seek.
 * - (idempotency_key) where not null: an operator's `idempotencyKey=` across every key (an application's own
 *   goes through the unique (api_key_id, idempotency_key) index). Partial: most mails have none.
 */
export function applicationReads(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('mails_api_key_idx').on('mails').columns(['api_key_id', 'id']).execute();
      await db.schema.createIndex('mails_message_id_idx').on('mails').column('message_id').execute();
      await db.schema
        .createIndex('mails_idempotency_key_idx')
        .on('mails')
        .column('idempotency_key')
        .where(sql.ref('idempotency_key'), 'is not', null)
        .execute();
    },
    async down(db: Kysely<unknown>) {
      for (const name of ['mails_api_key_idx', 'mails_message_id_idx', 'mails_idempotency_key_idx'])
        await db.schema.dropIndex(name).execute();
    },
  };
}
