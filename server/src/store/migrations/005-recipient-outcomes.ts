import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Per-recipient delivery outcomes. Each envelope recipient keeps what the
 * relay last said about it, so a recipient deferred with 4xx while others were accepted can be retried
 * alone, and the detail can show every recipient's fate without reading event JSON. The mail row keeps
 * two counts maintained with each outcome, so list rows show them without a join or count per row.
 *
 * - mail_recipients.outcome: 'pending' | 'accepted' | 'rejected' | 'deferred' on envelope rows; null on
 *   header rows (To/Cc/Bcc take the outcome of their envelope address) and on envelope rows of mails that
 *   were finished before this migration (their outcome was never recorded per recipient).
 * - mail_recipients.reply: the relay's last answer for that recipient; updated_at: when it was recorded.
 * - mails.recipient_count: distinct envelope recipients; mails.rejected_recipients: how many of them ended
 *   (or, while the mail is still queued, currently stand) rejected.
 */
export function recipientOutcomes(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('mail_recipients').addColumn('outcome', 'text').execute();
      await db.schema.alterTable('mail_recipients').addColumn('reply', 'text').execute();
      await db.schema.alterTable('mail_recipients').addColumn('updated_at', 'bigint').execute();
      await db.schema
        .alterTable('mails')
        .addColumn('recipient_count', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('mails')
        .addColumn('rejected_recipients', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      // Mails not yet finished (Queued 0, Dequeued 1, Processing 2) have every recipient still to deliver.
      await sql`update mail_recipients set outcome = 'pending'
        where kind = 'envelope' and mail_id in (select id from mails where status in (0, 1, 2))`.execute(db);
      await sql`update mails set recipient_count = (
        select count(distinct address) from mail_recipients r where r.mail_id = mails.id and r.kind = 'envelope')`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      for (const column of ['outcome', 'reply', 'updated_at']) await db.schema.alterTable('mail_recipients').dropColumn(column).execute();
      for (const column of ['recipient_count', 'rejected_recipients']) await db.schema.alterTable('mails').dropColumn(column).execute();
    },
  };
}
