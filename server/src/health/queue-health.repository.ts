/**
 * The queries of queue health. Each is one index seek or one index range, never a table scan:
 * - Queued not yet due: the queue's waiting rows past now (migration 022); due now is the Queued counter minus
 *   these (mails waiting for a retry are few next to a backlog, so the range read is the small side).
 * - Delivered since: (provider_sent_at, id) range; provider_sent_at is set only when the relay accepted.
 * - Failed since, newest change in a status: (status, last_update_at), migration 004.
 */
import { MailStatus } from '@outbox/contract';
import type { DbOrTrx } from '../store/connection.js';

async function count(query: Promise<{ n: number | string | bigint } | undefined>): Promise<number> {
  return Number((await query)?.n ?? 0);
}

export function countQueuedNotDue(db: DbOrTrx, now: number): Promise<number> {
  return count(
    db
      .selectFrom('mail_queue')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('lease_owner', 'is', null)
      .where('due_at', '>', now)
      .executeTakeFirst(),
  );
}

export function countDeliveredSince(db: DbOrTrx, since: number): Promise<number> {
  return count(
    db
      .selectFrom('mails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('provider_sent_at', '>=', since)
      .executeTakeFirst(),
  );
}

/** Mails in `status` whose last change is at or after `since`. */
export function countChangedSince(db: DbOrTrx, status: number, since: number): Promise<number> {
  return count(
    db
      .selectFrom('mails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', status)
      .where('last_update_at', '>=', since)
      .executeTakeFirst(),
  );
}

/** The newest last_update_at among mails in `status` (one seek at the end of its index range). */
export async function findLatestChange(db: DbOrTrx, status: number): Promise<number | undefined> {
  if (status === MailStatus.Processing) {
    // A Processing mail's last change is its lease's start, in the queue (mail/leases.ts); the leases are few.
    const lease = await db
      .selectFrom('mail_queue')
      .select((eb) => eb.fn.max('leased_at').as('at'))
      .where('lease_owner', 'is not', null)
      .executeTakeFirst();
    return lease?.at === null || lease?.at === undefined ? undefined : Number(lease.at);
  }
  const row = await db
    .selectFrom('mails')
    .select('last_update_at')
    .where('status', '=', status)
    .orderBy('last_update_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.last_update_at);
}
