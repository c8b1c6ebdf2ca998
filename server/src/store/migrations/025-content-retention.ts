import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Content retention (docs/operations.md#content-retention): a mail's content (its raw message,
 * bodies and attachments, all in `mail_contents`) may go before its record.
 * - `mails.content_removed_at`: when the content purge removed it; null while it is kept. On the record, not on
 *   `mail_contents`, so that the requeue's conditional UPDATE of the record can refuse a mail without content in
 *   the same statement that checks its status (mail/write/apply.ts), and the purge cannot race a requeue.
 * - `api_keys.content_retention_days`: an application's own retention in days (0: removed once final); null
 *   follows CONTENT_RETENTION_DAYS.
 * - `mails_content_pending_idx (api_key_id, last_update_at) where content_removed_at is null and status in (3, 4, 5)`:
 *   the purge's only read, one range per application. A mail leaves the index when its content goes, so the
 *   purge never reads a mail twice and never walks the store; Queued and Dequeued mails are not in it, so intake
 *   and claims do not write it (an outcome adds the entry, as it does to the other status indexes).
 */
export function contentRetention(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('api_keys').addColumn('content_retention_days', 'integer').execute();
      await db.schema.alterTable('mails').addColumn('content_removed_at', 'bigint').execute();
      await sql`create index mails_content_pending_idx on mails (api_key_id, last_update_at)
        where content_removed_at is null and status in (3, 4, 5)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('mails_content_pending_idx').execute();
      await db.schema.alterTable('mails').dropColumn('content_removed_at').execute();
      await db.schema.alterTable('api_keys').dropColumn('content_retention_days').execute();
    },
  };
}
