/**
 * The queue's side of the single writer's moves (apply.ts). The queue is its own table (`mail_queue`, migration 022):
 * a move out of Queued or Processing is decided on the mail's queue row (its lease is the condition, its row lock
 * orders a claim against a dequeue), and the record follows in the same transaction (record-moves.ts). A mail is
 * Processing exactly while its queue row holds a lease; its record stays Queued (mail/leases.ts shows it).
 */
import { sql, type RawBuilder } from 'kysely';
import { MailStatus, type MailStatusCode } from '@outbox/contract';
import { PREPARED, type DbOrTrx } from '../../store/connection.js';
import { engineOf } from '../../store/statement-batch.js';
import type { StatusTransition } from '../transition-types.js';
import { CHUNK } from './columns.js';

/** Statuses a mail has while it is in the queue (a row in `mail_queue`): waiting, or leased. */
export function isQueueStatus(status: MailStatusCode): status is typeof MailStatus.Queued | typeof MailStatus.Processing {
  return status === MailStatus.Queued || status === MailStatus.Processing;
}

/** SQLite's name for the index of `mail_queue`'s primary key (a `bigint` key is not the rowid). */
const SQLITE_QUEUE_KEY = 'sqlite_autoindex_mail_queue_1';

/**
 * What a move does to the mail's queue row: leases it, puts it (back) to wait, removes it, or keeps it as it is
 * (a Processing mail that stays Processing: a bounce report's event while a retry is under way).
 */
export function queueActionOf(from: MailStatusCode, to: MailStatusCode): 'lease' | 'wait' | 'leave' | 'stay' {
  if (from === MailStatus.Processing && to === MailStatus.Processing) return 'stay';
  return to === MailStatus.Processing ? 'lease' : to === MailStatus.Queued ? 'wait' : 'leave';
}

/**
 * The queue's side of moves out of Queued (a waiting row: `lease_owner is null`) or Processing (a leased row, with
 * the transitions' lease conditions): one conditional UPDATE or DELETE of `mail_queue` for the group, whose rows'
 * locks also make a claim and an operator's move of the same mail serialise (exactly one wins). Answers the mails
 * that passed with their attempts as the queue holds them (the claim counted the one under way). Like `updateFrom`
 * (record-moves.ts), the group's values go as one array per column (PostgreSQL) or one JSON parameter (SQLite): one
 * text per shape.
 */
export async function moveInQueue(
  db: DbOrTrx,
  from: typeof MailStatus.Queued | typeof MailStatus.Processing,
  chunk: readonly StatusTransition[],
): Promise<Map<number, number>> {
  const postgres = engineOf(db) === 'postgres';
  const first = chunk[0]!;
  const action = queueActionOf(from, first.to);
  const columns: Array<{ name: string; type: 'bigint' | 'integer' | 'text'; value: (t: StatusTransition) => unknown }> = [
    { name: 'id', type: 'bigint', value: (t) => t.id },
  ];
  const conditions: RawBuilder<unknown>[] = [
    sql`q.mail_id = v.id`,
    from === MailStatus.Processing ? sql`q.lease_owner is not null` : sql`q.lease_owner is null`,
  ];
  if (from === MailStatus.Queued && first.lease !== undefined) throw new RangeError('moveInQueue: a waiting mail has no lease to check');
  if (first.lease?.owner !== undefined) {
    columns.push({ name: 'held_by', type: 'text', value: (t) => t.lease?.owner });
    conditions.push(sql`q.lease_owner = v.held_by`);
  }
  if (first.lease?.expiresAt !== undefined) {
    columns.push({ name: 'held_until', type: 'bigint', value: (t) => t.lease?.expiresAt });
    conditions.push(sql`q.lease_expires_at = v.held_until`);
  }
  if (first.lease?.expiredBy !== undefined) {
    columns.push({ name: 'expired_by', type: 'bigint', value: (t) => t.lease?.expiredBy });
    conditions.push(sql`q.lease_expires_at <= v.expired_by`);
  }
  // 'stay' (a bounce's event while a retry is under way) only checks the lease, taking no lock on the queue row: its
  // caller locked the record first (the event sequence), and an outcome locks the queue row before the record, so a
  // lock here could deadlock with it. An outcome that lands first changes the record's status, and the record's
  // UPDATE (conditional on the stored status) then misses.
  const assignments: RawBuilder<unknown>[] = [];
  if (action === 'lease') {
    if (from === MailStatus.Processing) throw new RangeError('moveInQueue: a leased mail is renewed by renewLeases');
    columns.push(
      { name: 'owner', type: 'text', value: (t) => t.set?.lease?.owner },
      { name: 'expires', type: 'bigint', value: (t) => t.set?.lease?.expiresAt },
      { name: 'at', type: 'bigint', value: (t) => t.at },
    );
    assignments.push(sql`lease_owner = v.owner`, sql`lease_expires_at = v.expires`, sql`leased_at = v.at`);
    if (first.set?.attempts === 'increment') assignments.push(sql`attempts = q.attempts + 1`);
  } else if (action === 'wait') {
    columns.push(
      { name: 'next_at', type: 'bigint', value: (t) => t.set?.nextAttemptAt ?? null },
      { name: 'new_attempts', type: 'integer', value: (t) => (typeof t.set?.attempts === 'number' ? t.set.attempts : null) },
    );
    assignments.push(
      sql`lease_owner = null`,
      sql`lease_expires_at = null`,
      sql`leased_at = null`,
      sql`due_at = coalesce(v.next_at, q.due_at)`,
      sql`attempts = coalesce(v.new_attempts, q.attempts)`,
    );
  }
  const names = sql.join(columns.map((c) => sql.ref(c.name)));
  const where = sql.join(conditions, sql` and `);
  let rows: Array<{ mail_id: number; attempts: number }>;
  if (postgres) {
    const values = sql`unnest(${sql.join(columns.map((c) => sql`${chunk.map((t) => c.value(t) ?? null)}::${sql.raw(c.type)}[]`))}) as v (${names})`;
    ({ rows } =
      action === 'stay'
        ? await sql<{
            mail_id: number;
            attempts: number;
          }>`select q.mail_id, q.attempts from mail_queue q, ${values} where ${where}`.execute(db)
        : action === 'leave'
          ? await sql<{ mail_id: number; attempts: number }>`${sql.raw(PREPARED)}
            delete from mail_queue q using ${values} where ${where} returning q.mail_id, q.attempts`.execute(db)
          : await sql<{ mail_id: number; attempts: number }>`${sql.raw(PREPARED)}
            update mail_queue q set ${sql.join(assignments, sql`, `)} from ${values} where ${where}
            returning q.mail_id, q.attempts`.execute(db));
  } else {
    // SQLite: each of the group's mails is found by its key (`v` first, then `mail_queue`'s primary-key index),
    // whatever the queue's statistics say. Left to the planner, a store analyzed while its queue was empty (every
    // store its migrations made) saw the partial indexes as empty and scanned every waiting row, reading the
    // JSON once per row: a group of 2,500 against 80,000 waiting mails took seconds.
    const json = JSON.stringify(chunk.map((t) => columns.map((c) => c.value(t) ?? null)));
    const cells = columns.map((c, i) => sql`cast(value ->> ${sql.lit(i)} as ${sql.raw(c.type)})`);
    const values = sql`v (${names}) as (select ${sql.join(cells)} from json_each(${json}))`;
    const byKey = sql.raw(`mail_queue as q indexed by ${SQLITE_QUEUE_KEY}`);
    ({ rows } =
      action === 'stay'
        ? await sql<{ mail_id: number; attempts: number }>`with ${values}
            select q.mail_id, q.attempts from v cross join ${byKey} where ${where}`.execute(db)
        : action === 'leave'
          ? await sql<{ mail_id: number; attempts: number }>`with ${values}
            delete from mail_queue where mail_id in (select q.mail_id from v cross join ${byKey} where ${where})
            returning mail_id, attempts`.execute(db)
          : await sql<{ mail_id: number; attempts: number }>`with ${values}
            update ${byKey} set ${sql.join(assignments, sql`, `)} from v where ${where}
            returning mail_id, attempts`.execute(db));
  }
  return new Map(rows.map((row) => [Number(row.mail_id), Number(row.attempts)]));
}

/** Queue rows for mails that came back to Queued from outside the queue (a requeue): due when their record says. */
export async function enqueue(db: DbOrTrx, ids: readonly number[]): Promise<void> {
  for (let start = 0; start < ids.length; start += CHUNK) {
    await sql`insert into mail_queue (mail_id, due_at, attempts, api_key_id, lane)
      select id, next_attempt_at, attempts, coalesce(api_key_id, 0), lane from mails where id in (${sql.join(ids.slice(start, start + CHUNK))})
      on conflict (mail_id) do nothing`.execute(db);
  }
}
