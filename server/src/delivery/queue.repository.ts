/**
 * The queue's SQL. The mail row is the queue entry (PRODUCT.md §4): claiming picks due Queued rows and
 * moves them to Processing under a lease with one conditional UPDATE (through `applyTransitions`, like
 * every status change; outcomes too, see outcome-commit.ts). The engines differ in one place: PostgreSQL
 * picks with FOR UPDATE SKIP LOCKED so concurrent workers take disjoint batches without waiting; SQLite has
 * a single writer, so the pick and the conditional UPDATE in one transaction cannot interleave with another.
 */
import { MailStatus } from '@outbox/contract';
import { applyTransitions } from '../mail/transition.repository.js';
import type { DbOrTrx, Engine } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { claimTransition, type ExpiredLease } from './transitions.js';

export interface ClaimRequest {
  now: number;
  limit: number;
  owner: string;
  leaseExpiresAt: number;
}

/**
 * Queued → Processing for up to `limit` due mails, oldest due first; counts the attempt and moves the
 * counters. The due mails are picked first (on PostgreSQL `FOR UPDATE SKIP LOCKED`, so concurrent workers
 * take disjoint batches without waiting), then claimed by one conditional UPDATE for the whole batch.
 */
export async function claimDueMails(db: DbOrTrx, engine: Engine, claim: ClaimRequest): Promise<MailRow[]> {
  let due = db
    .selectFrom('mails')
    .select('id')
    .where('status', '=', MailStatus.Queued)
    .where('next_attempt_at', '<=', claim.now)
    .orderBy('next_attempt_at')
    .orderBy('id')
    .limit(claim.limit);
  if (engine === 'postgres') due = due.forUpdate().skipLocked();
  const ids = (await due.execute()).map((row) => row.id);
  const lease = { owner: claim.owner, expiresAt: claim.leaseExpiresAt };
  const { moved, rows } = await applyTransitions(
    db,
    ids.map((id) => claimTransition(id, claim.now, lease)),
    { returnRows: true },
  );
  return moved.map((m) => rows.get(m.id)!);
}

export interface DeliveryPayload {
  mailId: number;
  raw: Buffer | null;
  envelopeFrom: string;
  envelopeTo: string[];
}

/** What the relay needs for each claimed mail: the stored bytes and the envelope (the `envelope` recipients). */
export async function loadDeliveryPayloads(db: DbOrTrx, mailIds: number[]): Promise<Map<number, DeliveryPayload>> {
  const payloads = new Map<number, DeliveryPayload>();
  if (mailIds.length === 0) return payloads;
  const [contents, recipients] = await Promise.all([
    db.selectFrom('mail_contents').select(['mail_id', 'raw', 'envelope_from']).where('mail_id', 'in', mailIds).execute(),
    db
      .selectFrom('mail_recipients')
      .select(['mail_id', 'address'])
      .where('mail_id', 'in', mailIds)
      .where('kind', '=', 'envelope')
      .orderBy('mail_id')
      .orderBy('position')
      .execute(),
  ]);
  for (const content of contents) {
    payloads.set(content.mail_id, { mailId: content.mail_id, raw: content.raw, envelopeFrom: content.envelope_from, envelopeTo: [] });
  }
  for (const recipient of recipients) {
    const payload = payloads.get(recipient.mail_id);
    if (payload && !payload.envelopeTo.includes(recipient.address)) payload.envelopeTo.push(recipient.address);
  }
  return payloads;
}

/** Mails whose lease ran out by `now` (their worker died or hung), with who held each one. */
export function listExpiredLeases(db: DbOrTrx, now: number): Promise<ExpiredLease[]> {
  return db
    .selectFrom('mails')
    .select(['id', 'lease_owner', 'attempts', 'received_at'])
    .where('status', '=', MailStatus.Processing)
    .where('lease_expires_at', '<=', now)
    .execute();
}

/** The mails this worker holds, at a graceful stop. */
export async function listLeasesOf(db: DbOrTrx, owner: string): Promise<number[]> {
  const rows = await db
    .selectFrom('mails')
    .select('id')
    .where('status', '=', MailStatus.Processing)
    .where('lease_owner', '=', owner)
    .execute();
  return rows.map((row) => row.id);
}

/** The earliest next_attempt_at among Queued mails, to know how long the worker may sleep. */
export async function findNextDueAt(db: DbOrTrx): Promise<number | undefined> {
  const row = await db
    .selectFrom('mails')
    .select('next_attempt_at')
    .where('status', '=', MailStatus.Queued)
    .orderBy('next_attempt_at')
    .limit(1)
    .executeTakeFirst();
  return row?.next_attempt_at;
}
