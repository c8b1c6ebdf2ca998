import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * Bounce reports go with their mail (docs/bounces.md#limits): `bounce_reports.mail_id` becomes
 * a foreign key to `mails` with ON DELETE CASCADE, so every way a mail is deleted (the operator's delete, a bulk
 * delete, the RETENTION_DAYS purge) takes its reports, and their personal data, with it. Reports whose mail is
 * already gone are deleted here. The index on `mail_id` becomes `(mail_id, received_at, id)`: it serves the cascade,
 * the paged read of a mail's reports and the trim of the oldest unmatched reports (`mail_id is null`).
 *
 * SQLite cannot add a foreign key to a table, so the table is rebuilt (the documented twelve-step way, inside the
 * migration's transaction; nothing refers to bounce_reports).
 */
export function bounceReportsWithMail(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`delete from bounce_reports where mail_id is not null and not exists (select 1 from mails where mails.id = bounce_reports.mail_id)`.execute(
        db,
      );
      if (engine === 'postgres') {
        await sql`alter table bounce_reports add constraint bounce_reports_mail_fk foreign key (mail_id) references mails (id) on delete cascade`.execute(
          db,
        );
      } else {
        await sql`create table bounce_reports_new (
          id integer primary key autoincrement,
          received_at bigint not null,
          envelope_from text not null,
          envelope_to text not null,
          kind text not null,
          mail_id bigint references mails (id) on delete cascade,
          matched_by text,
          summary text not null,
          raw blob not null
        )`.execute(db);
        await sql`insert into bounce_reports_new (id, received_at, envelope_from, envelope_to, kind, mail_id, matched_by, summary, raw)
          select id, received_at, envelope_from, envelope_to, kind, mail_id, matched_by, summary, raw from bounce_reports`.execute(db);
        await sql`drop table bounce_reports`.execute(db);
        await sql`alter table bounce_reports_new rename to bounce_reports`.execute(db);
        await sql`create index bounce_reports_received_idx on bounce_reports (received_at, id)`.execute(db);
      }
      await sql`drop index if exists bounce_reports_mail_idx`.execute(db);
      await sql`create index bounce_reports_mail_idx on bounce_reports (mail_id, received_at, id)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      // The constraint is dropped with the table (SQLite) or by name (PostgreSQL); the wider index stays useful.
      if (engine === 'postgres') await sql`alter table bounce_reports drop constraint bounce_reports_mail_fk`.execute(db);
    },
  };
}
