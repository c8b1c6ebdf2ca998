import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Every mail's `last_update_at` is at or after its `received_at`, as the list expects. The writers now keep it so
 * (`insertMails`, the claims and `applyTransitions` write the later of the two; an import is clamped), and this
 * moves the few rows written otherwise before: a clock that stepped back between a mail's receipt and a later
 * change of it. The list relies on it: a date range sorted by last update seeks `last_update_at >= from`, since
 * no mail received after `from` can have been updated before it.
 */
export function updateAfterReceipt(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`update mails set last_update_at = received_at where last_update_at < received_at`.execute(db);
    },
    async down() {
      // Nothing to undo: the rows moved hold a later, still true, time of their last change.
    },
  };
}
