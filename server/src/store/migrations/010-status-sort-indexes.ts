import type { Kysely, Migration } from 'kysely';

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

export function statusSortIndexes(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      for (const [name, column] of INDEXES) {
        await db.schema.createIndex(name).on('mails').columns(['status', column, 'id']).execute();
      }
    },
    async down(db: Kysely<unknown>) {
      for (const [name] of INDEXES) await db.schema.dropIndex(name).execute();
    },
  };
}
