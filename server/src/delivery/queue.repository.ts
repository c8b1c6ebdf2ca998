/**
 * The queue's SQL. The mail row is the queue entry (PRODUCT.md §4): claiming is one conditional UPDATE of
 * due Queued rows to Processing under a lease; recording an outcome is one conditional UPDATE that only
 * the lease holder can make. The engines differ in one place: PostgreSQL claims with FOR UPDATE SKIP LOCKED
 * so concurrent workers take disjoint batches without waiting; SQLite has a single writer, so the plain
 * subquery is already atomic.
 */
import { sql } from 'kysely';
import type { DbOrTrx, Engine } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';

export interface ClaimRequest {
  now: number;
  limit: number;
  owner: string;
  leaseExpiresAt: number;
}

/** Queued → Processing for up to `limit` due mails, oldest due first; counts the attempt. */
export function claimDueMails(db: DbOrTrx, engine: Engine, claim: ClaimRequest): Promise<MailRow[]> {
  let due = db
    .selectFrom('mails')
    .select('id')
    .where('status', '=', 0)
    .where('next_attempt_at', '<=', claim.now)
    .orderBy('next_attempt_at')
    .orderBy('id')
    .limit(claim.limit);
  if (engine === 'postgres') due = due.forUpdate().skipLocked();
  return db
    .updateTable('mails')
    .set((eb) => ({
      status: 2,
      lease_owner: claim.owner,
      lease_expires_at: claim.leaseExpiresAt,
      last_update_at: claim.now,
      attempts: eb('attempts', '+', 1),
    }))
    .where('id', 'in', due)
    .where('status', '=', 0)
    .returningAll()
    .execute();
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

export interface AttemptResult {
  id: number;
  owner: string;
  /** The claim's lease expiry: with the owner it names the claim, so a stale claim of the same worker cannot write. */
  leaseExpiresAt: number | null;
  now: number;
  toStatus: number;
  reply: string;
  /** When going back to Queued. */
  nextAttemptAt?: number | undefined;
  /** When the provider accepted it. */
  providerSentAt?: number | undefined;
}

/**
 * Processing → the outcome, for many mails in one statement (a worker's group commit), each only while its
 * claim (owner and lease expiry) still holds the mail: a worker whose lease expired and was swept must not
 * overwrite what happened since. One UPDATE joined to a VALUES list, instead of one statement, one round
 * trip and one query compilation per mail. The same SQL
 * runs on both engines (UPDATE … FROM: SQLite ≥ 3.33, PostgreSQL); the casts give PostgreSQL the types of
 * the VALUES columns. Returns the ids whose lease was still this claim's, i.e. the rows it changed.
 */
export async function recordAttemptResults(db: DbOrTrx, results: AttemptResult[]): Promise<Set<number>> {
  const recorded = new Set<number>();
  for (let start = 0; start < results.length; start += 500) {
    const rows = results
      .slice(start, start + 500)
      .map(
        (r) =>
          sql`(cast(${r.id} as bigint), cast(${r.toStatus} as integer), cast(${r.reply} as text), cast(${r.now} as bigint), cast(${r.nextAttemptAt ?? null} as bigint), cast(${r.providerSentAt ?? null} as bigint), cast(${r.owner} as text), cast(${r.leaseExpiresAt} as bigint))`,
      );
    const updated = await sql<{ id: number }>`
      with v (id, status, reply, at, next_at, sent_at, owner, lease_expires_at) as (values ${sql.join(rows)})
      update mails set
        status = v.status,
        last_update_at = v.at,
        provider_reply = v.reply,
        lease_owner = null,
        lease_expires_at = null,
        next_attempt_at = coalesce(v.next_at, mails.next_attempt_at),
        provider_sent_at = coalesce(v.sent_at, mails.provider_sent_at)
      from v
      where mails.id = v.id and mails.status = 2 and mails.lease_owner = v.owner and mails.lease_expires_at = v.lease_expires_at
      returning mails.id`.execute(db);
    for (const row of updated.rows) recorded.add(Number(row.id));
  }
  return recorded;
}

/**
 * Processing → Queued, due now, for every lease that ran out (its worker died or hung). Returns who held
 * each one, read before the update, since RETURNING shows the row after it (lease_owner already cleared).
 */
export interface ExpiredLease {
  id: number;
  lease_owner: string | null;
  attempts: number;
  received_at: number;
}

/**
 * Each expired lease goes back to Queued, due now, or, when `givesUp` says the mail's retry budget is
 * spent (a mail that keeps killing or hanging its worker), to Error. Both updates are conditional on the
 * lease still being expired, so a late outcome or another sweeper wins cleanly.
 */
export async function releaseExpiredLeases(
  db: DbOrTrx,
  now: number,
  givesUp: (lease: ExpiredLease) => boolean = () => false,
): Promise<Array<ExpiredLease & { toStatus: number }>> {
  const expired = await db
    .selectFrom('mails')
    .select(['id', 'lease_owner', 'attempts', 'received_at'])
    .where('status', '=', 2)
    .where('lease_expires_at', '<=', now)
    .execute();
  if (expired.length === 0) return [];
  const released: Array<ExpiredLease & { toStatus: number }> = [];
  for (const [toStatus, rows] of [
    [0, expired.filter((row) => !givesUp(row))],
    [5, expired.filter((row) => givesUp(row))],
  ] as const) {
    if (rows.length === 0) continue;
    const updated = await db
      .updateTable('mails')
      .set({
        status: toStatus,
        last_update_at: now,
        lease_owner: null,
        lease_expires_at: null,
        ...(toStatus === 0
          ? { next_attempt_at: now }
          : { provider_reply: 'The worker delivering it stopped answering on every attempt; the retry budget is spent.' }),
      })
      .where(
        'id',
        'in',
        rows.map((row) => row.id),
      )
      .where('status', '=', 2)
      .where('lease_expires_at', '<=', now)
      .returning(['id'])
      .execute();
    const updatedIds = new Set(updated.map((row) => row.id));
    released.push(...rows.filter((row) => updatedIds.has(row.id)).map((row) => ({ ...row, toStatus })));
  }
  return released;
}

/** Processing → Queued for this worker's own leases, at a graceful stop, so nothing waits for expiry. */
export function releaseLeasesOf(db: DbOrTrx, owner: string, now: number): Promise<Array<{ id: number }>> {
  return db
    .updateTable('mails')
    .set({ status: 0, next_attempt_at: now, last_update_at: now, lease_owner: null, lease_expires_at: null })
    .where('status', '=', 2)
    .where('lease_owner', '=', owner)
    .returning(['id'])
    .execute();
}

/** The earliest next_attempt_at among Queued mails, to know how long the worker may sleep. */
export async function findNextDueAt(db: DbOrTrx): Promise<number | undefined> {
  const row = await db
    .selectFrom('mails')
    .select('next_attempt_at')
    .where('status', '=', 0)
    .orderBy('next_attempt_at')
    .limit(1)
    .executeTakeFirst();
  return row?.next_attempt_at;
}
