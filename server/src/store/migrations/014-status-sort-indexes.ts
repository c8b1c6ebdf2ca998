import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * A status filter reads one `(status, sort column, id)` index per chosen status and merges the pages
 * (docs/query-plans.md, plan `index`), so every sort needs one. Received date, last update and status had
 * theirs (001, 004, 002); these are the other four. Without them `status=1,5 sort=providerSentDate` walked
 * the `provider_sent_at` index past every sent mail: 1.7 s at 1M mails.
 */
const INDEXES = [
  ['mails_status_provider_sent_idx', 'provider_sent_at'],
  ['mails_status_subject_idx', 'subject'],
  ['mails_status_from_idx', 'from_mail'],
  ['mails_status_first_to_idx', 'first_to_mail'],
] as const;

export function statusSortIndexes(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      for (const [name, column] of INDEXES) {
        await db.schema.createIndex(name).on('mails').columns(['status', column, 'id']).execute();
        // SQLite weighs indexes by sqlite_stat1: where the older ones have statistics, a new one without any
        // looks the most selective for any `status = ?` and wins plans it should not (the oldest Queued mail,
        // 0.9 s). PostgreSQL's autovacuum analyzes the table itself.
        if (engine === 'sqlite') await sql`analyze ${sql.raw(name)}`.execute(db);
      }
    },
    async down(db: Kysely<unknown>) {
      for (const [name] of INDEXES) await db.schema.dropIndex(name).execute();
    },
  };
}
