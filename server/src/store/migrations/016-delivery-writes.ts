import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * Fewer index entries per delivered mail (issue 25 item 1).
 *
 * - `mails_lease_idx` `(status, lease_expires_at)` goes. Every claim and every outcome changes a mail's status,
 *   so every delivery wrote it twice (on PostgreSQL, whose mail updates are never HOT, every index gets an
 *   entry per update anyway: one of 21 fewer). Its readers, the lease sweeper (`status = 2 and
 *   lease_expires_at <= now`) and a worker's stop (`status = 2 and lease_owner = me`), read the Processing
 *   mails through `(status, id)` instead: they are the mails workers hold now, at most three times each
 *   worker's concurrency, so a filter over them costs what the range did.
 * - PostgreSQL: `mail_recipients` pages keep a quarter free (fillfactor 75), so an outcome written to a
 *   recipient (outcome, reply, updated_at: no index holds them) is a HOT update beside the old row version
 *   instead of a new row version elsewhere with a new entry in each of its indexes. It applies to pages
 *   filled from now on; rows already stored stay where they are.
 */
export function deliveryWrites(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('mails_lease_idx').execute();
      if (engine === 'postgres') await sql`alter table mail_recipients set (fillfactor = 75)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine === 'postgres') await sql`alter table mail_recipients reset (fillfactor)`.execute(db);
      await db.schema.createIndex('mails_lease_idx').on('mails').columns(['status', 'lease_expires_at']).execute();
    },
  };
}
