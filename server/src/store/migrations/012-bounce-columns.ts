import type { Kysely, Migration } from 'kysely';

/**
 * Bounce matching (issue 22, docs/bounces.md#what-is-matched): a report whose return path does not name a mail is
 * matched by the returned headers' Message-ID, which without an index is a scan of every mail. One index on
 * `mails.message_id`; it costs intake one more index entry per mail.
 */
export function bounceColumns(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('mails_message_id_idx').on('mails').columns(['message_id']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('mails_message_id_idx').ifExists().execute();
    },
  };
}
