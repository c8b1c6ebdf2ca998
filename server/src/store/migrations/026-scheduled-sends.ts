import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * Scheduled sends (docs/api.md#scheduled-sends): `mails.send_at` keeps the time the submitter asked
 * for, null for a mail sent as soon as it can be. The queue's `due_at` already says when a mail may be claimed;
 * the record keeps the request itself, so the list and the drawer can show a mail as scheduled, a requeue can
 * restore the schedule and the retry budget's age counts from it. A nullable column without a default: an instant
 * change on both engines, whatever the table's size.
 */
export function scheduledSends(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`alter table mails add column send_at ${sql.raw(engine === 'postgres' ? 'bigint' : 'integer')}`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      await sql`alter table mails drop column send_at`.execute(db);
    },
  };
}
