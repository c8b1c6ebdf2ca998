import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * The queue apart from the record (docs/decisions.md#the-queue-is-its-own-table).
 *
 * `mail_queue` holds one narrow row per mail that waits (Queued) or is leased (Processing), and none for any
 * other mail: when it is due, its attempts, the lease's holder and expiry, and room for lanes (application,
 * priority). A claim writes only this table; the mail's record (`mails`) is written at intake, at each
 * attempt's outcome and by operators. A mail is Processing exactly while its queue row holds a lease: its
 * stored status stays Queued (0), and every reader of a status shows 2 for it (mail/leases.ts).
 *
 * - `mail_queue_due_idx (due_at, mail_id) where lease_owner is null`: the claim's pick, oldest due first, with
 *   no leased row in it. `mail_queue_lease_idx (lease_expires_at) where lease_owner is not null`: the sweeper,
 *   a worker's stop and the Processing count, over the few leased rows only.
 * - The rows of today's Queued and Processing mails move in as they are, the live leases with their holder and
 *   expiry, so nothing is sent twice and nothing waits longer than its lease; the Processing mails' stored
 *   status becomes Queued and their counter moves with them.
 * - `mails` loses its lease columns and the two indexes that served the claim and the sweeper (015, 016): no
 *   claim writes it, so the list's indexes are no longer paid twice per delivery.
 * - PostgreSQL: `mails` pages keep a tenth free (fillfactor 90), so an update touching no indexed column (a
 *   bounce's event sequence) is HOT; it applies to pages filled from now on. The queue's autovacuum runs after
 *   a thousand dead rows rather than a fifth of the table: every delivery leaves two (claim, outcome), and a
 *   small table full of dead rows slows every claim (graphile-worker's and pg-boss's advice).
 */
export function mailQueue(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`create table mail_queue (
        mail_id bigint primary key references mails (id) on delete cascade,
        due_at bigint not null,
        attempts integer not null default 0,
        lease_owner text,
        lease_expires_at bigint,
        leased_at bigint,
        api_key_id bigint,
        priority integer not null default 0
      )`.execute(db);
      await sql`insert into mail_queue (mail_id, due_at, attempts, lease_owner, lease_expires_at, leased_at, api_key_id)
        select id, next_attempt_at, attempts,
          case when status = 2 then coalesce(lease_owner, '') end,
          case when status = 2 then coalesce(lease_expires_at, 0) end,
          case when status = 2 then last_update_at end,
          api_key_id
        from mails where status in (0, 2)`.execute(db);
      await sql`create index mail_queue_due_idx on mail_queue (due_at, mail_id) where lease_owner is null`.execute(db);
      await sql`create index mail_queue_lease_idx on mail_queue (lease_expires_at) where lease_owner is not null`.execute(db);
      await sql`update status_counts set count = count + (select count from status_counts where status = 2) where status = 0`.execute(db);
      await sql`update status_counts set count = 0 where status = 2`.execute(db);
      await sql`update mails set status = 0 where status = 2`.execute(db);
      await db.schema.dropIndex('mails_processing_lease_idx').execute();
      await db.schema.dropIndex('mails_queue_due_idx').execute();
      await db.schema.alterTable('mails').dropColumn('lease_owner').execute();
      await db.schema.alterTable('mails').dropColumn('lease_expires_at').execute();
      if (engine === 'postgres') {
        await sql`alter table mails set (fillfactor = 90)`.execute(db);
        await sql`alter table mail_queue set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
          autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 1000)`.execute(db);
        await sql`analyze mail_queue`.execute(db);
      } else {
        // As in 014: on SQLite a new index without statistics would look the most selective for any query.
        await sql`analyze mail_queue`.execute(db);
      }
    },
    async down(db: Kysely<unknown>) {
      if (engine === 'postgres') await sql`alter table mails reset (fillfactor)`.execute(db);
      await db.schema.alterTable('mails').addColumn('lease_owner', 'text').execute();
      await db.schema.alterTable('mails').addColumn('lease_expires_at', 'bigint').execute();
      await sql`update mails set status = 2,
          lease_owner = (select lease_owner from mail_queue q where q.mail_id = mails.id),
          lease_expires_at = (select lease_expires_at from mail_queue q where q.mail_id = mails.id),
          attempts = (select attempts from mail_queue q where q.mail_id = mails.id)
        where id in (select mail_id from mail_queue where lease_owner is not null)`.execute(db);
      await sql`update status_counts set count = (select count(*) from mail_queue where lease_owner is not null) where status = 2`.execute(
        db,
      );
      await sql`update status_counts set count = count - (select count from status_counts where status = 2) where status = 0`.execute(db);
      await db.schema.createIndex('mails_queue_due_idx').on('mails').columns(['status', 'next_attempt_at', 'id']).execute();
      await sql`create index mails_processing_lease_idx on mails (lease_expires_at) where status = 2`.execute(db);
      await db.schema.dropTable('mail_queue').execute();
    },
  };
}
