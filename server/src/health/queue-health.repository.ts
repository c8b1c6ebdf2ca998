/**
 * The queries of queue health. Each is one index seek or one index range, never a table scan:
 * - Queued not yet due: (status, next_attempt_at) range; due now is the Queued counter minus these (mails
 *   waiting for a retry are few next to a backlog, so the range read is the small side).
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
      .selectFrom('mails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', MailStatus.Queued)
      .where('next_attempt_at', '>', now)
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
  const row = await db
    .selectFrom('mails')
    .select('last_update_at')
    .where('status', '=', status)
    .orderBy('last_update_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.last_update_at);
}
