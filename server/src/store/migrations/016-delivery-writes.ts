import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * Fewer index entries per delivered mail.
 *
 * - `mails_lease_idx` `(status, lease_expires_at)` becomes `mails_processing_lease_idx` `(lease_expires_at)
 *   where status = 2`. Every claim and every outcome changes a mail's status, so every delivery wrote the old
 *   index twice; the partial one holds the Processing mails only, so a delivery writes it once (at its claim;
 *   the outcome's row is not Processing, and PostgreSQL adds no entry for a row outside the predicate). Its
 *   readers, the lease sweeper (`status = 2 and lease_expires_at <= now`) and a worker's stop (`status = 2 and
 *   lease_owner = me`), write the status as a literal so that both engines see the predicate holds. Without
 *   any lease index the sweeper would read every Processing mail: few under real workers, ~20,000 in a
 *   million demo mails.
 * - PostgreSQL: `mail_recipients` pages keep a quarter free (fillfactor 75), so an outcome written to a
 *   recipient (outcome, reply, updated_at: no index holds them) is a HOT update beside the old row version
 *   instead of a new row version elsewhere with a new entry in each of its indexes. It applies to pages
 *   filled from now on; rows already stored stay where they are.
 */
export function deliveryWrites(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('mails_lease_idx').execute();
      await sql`create index mails_processing_lease_idx on mails (lease_expires_at) where status = 2`.execute(db);
      // As in 014: on SQLite a new index without statistics would look the most selective for any query.
      if (engine === 'sqlite') await sql`analyze mails_processing_lease_idx`.execute(db);
      if (engine === 'postgres') await sql`alter table mail_recipients set (fillfactor = 75)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine === 'postgres') await sql`alter table mail_recipients reset (fillfactor)`.execute(db);
      await db.schema.createIndex('mails_lease_idx').on('mails').columns(['status', 'lease_expires_at']).execute();
      await db.schema.dropIndex('mails_processing_lease_idx').execute();
    },
  };
}
