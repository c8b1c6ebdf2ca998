import type { Kysely, Migration } from 'kysely';

/**
 * Queue health asks "how many mails failed in the last hour" and "when did a worker last
 * move a mail": both are ranges of last_update_at within one status. The (last_update_at, id) index alone
 * would read every mail changed in the last hour and look each one's status up in the table; with
 * (status, last_update_at) each answer is one range seek, or one seek for the newest.
 */
export function statusLastUpdateIndex(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('mails_status_last_update_idx').on('mails').columns(['status', 'last_update_at']).execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('mails_status_last_update_idx').execute();
    },
  };
}
