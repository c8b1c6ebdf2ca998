import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * Lanes (docs/lanes.md): each application is `transactional` (0, the default) or `bulk` (1), and a mail
 * may name its own. The claim serves the transactional lane first, keeps a share of every claim for bulk, and lets
 * the applications of a lane take turns (mail/write/claim.ts).
 *
 * - `api_keys.lane` and `mails.lane`: the application's lane, and the lane the mail was accepted into (its record,
 *   shown in the detail and read again when a requeue puts it back in the queue).
 * - `mail_queue.priority`, left room for in 022, becomes `mail_queue.lane`; `mail_queue.api_key_id` is 0 for a mail of
 *   no application (an operator's, the demo's), so every waiting row sits in one (lane, application) range, and it
 *   is NOT NULL from here on (store/schema.ts says so; test/store/schema-matches-database.test.ts holds them
 *   together). SQLite cannot change a column's nullability in place: there the narrow queue table is copied into a
 *   new one (a row per waiting mail, so quick), as SQLite's documentation describes for any such change.
 * - `mail_queue_turns_idx (lane, api_key_id, due_at, mail_id) where lease_owner is null`: the claim's pick per lane and
 *   application, oldest due first. The due index stays for what asks across lanes (the alert on the oldest due mail,
 *   queue health).
 * Constant defaults: an instant change of `mails` on both engines, whatever its size.
 */
export function lanes(engine: Engine): Migration {
  const small = sql.raw(engine === 'postgres' ? 'smallint' : 'integer');
  return {
    async up(db: Kysely<unknown>) {
      await sql`alter table api_keys add column lane ${small} not null default 0`.execute(db);
      await sql`alter table mails add column lane ${small} not null default 0`.execute(db);
      await sql`update mail_queue set api_key_id = 0 where api_key_id is null`.execute(db);
      if (engine === 'postgres') {
        await sql`alter table mail_queue rename column priority to lane`.execute(db);
        await sql`alter table mail_queue alter column api_key_id set not null`.execute(db);
      } else await rebuildSqliteQueue(db, { from: 'priority', to: 'lane', applicationColumn: 'api_key_id bigint not null' });
      await sql`create index mail_queue_turns_idx on mail_queue (lane, api_key_id, due_at, mail_id) where lease_owner is null`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      await sql`drop index mail_queue_turns_idx`.execute(db);
      if (engine === 'postgres') {
        await sql`alter table mail_queue alter column api_key_id drop not null`.execute(db);
        await sql`alter table mail_queue rename column lane to priority`.execute(db);
      } else await rebuildSqliteQueue(db, { from: 'lane', to: 'priority', applicationColumn: 'api_key_id bigint' });
      await sql`update mail_queue set api_key_id = null where api_key_id = 0`.execute(db);
      await sql`alter table mails drop column lane`.execute(db);
      await sql`alter table api_keys drop column lane`.execute(db);
    },
  };
}

/**
 * SQLite's way to change a column's constraint: a new table, the rows copied, the old one dropped, the new one
 * renamed, its indexes made again (022's two; the caller makes the turns index). No table refers to mail_queue.
 */
async function rebuildSqliteQueue(db: Kysely<unknown>, columns: { from: string; to: string; applicationColumn: string }): Promise<void> {
  await sql`create table mail_queue_rebuilt (
    mail_id bigint primary key references mails (id) on delete cascade,
    due_at bigint not null,
    attempts integer not null default 0,
    lease_owner text,
    lease_expires_at bigint,
    leased_at bigint,
    ${sql.raw(columns.applicationColumn)},
    ${sql.raw(columns.to)} integer not null default 0
  )`.execute(db);
  await sql`insert into mail_queue_rebuilt (mail_id, due_at, attempts, lease_owner, lease_expires_at, leased_at, api_key_id, ${sql.raw(columns.to)})
    select mail_id, due_at, attempts, lease_owner, lease_expires_at, leased_at, api_key_id, ${sql.raw(columns.from)} from mail_queue`.execute(
    db,
  );
  await sql`drop table mail_queue`.execute(db);
  await sql`alter table mail_queue_rebuilt rename to mail_queue`.execute(db);
  await sql`create index mail_queue_due_idx on mail_queue (due_at, mail_id) where lease_owner is null`.execute(db);
  await sql`create index mail_queue_lease_idx on mail_queue (lease_expires_at) where lease_owner is not null`.execute(db);
  await sql`analyze mail_queue`.execute(db);
}
