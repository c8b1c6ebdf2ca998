/**
 * The delivery worker's own SQL beside the one writer (mail/write/, which owns the claim and every status
 * write): the payload a claimed mail's send needs, the recipients' outcomes, the leases the sweeper returns and
 * the next due time. The queue is its own narrow table, `mail_queue` (migration 022, docs/decisions.md): a row per
 * mail that waits or is leased. Claiming picks due waiting rows and leases them, writing only that table (in
 * mail/write/, the one writer of the queue and the record; outcomes too, see
 * outcome-commit.ts). The engines differ in the claim: on PostgreSQL it is one statement that picks with FOR
 * UPDATE SKIP LOCKED (concurrent workers take disjoint batches without waiting), leases and returns the records
 * and payloads; SQLite has a single writer, so the pick, the conditional UPDATE and the reads in one transaction
 * cannot interleave with another.
 */
import { sql } from 'kysely';
import { claimDueMailsSqlite, claimDueMailsWithPayload, type ClaimedRow, type QueueClaim } from '../mail/write/claim.js';
import { PREPARED, type DbOrTrx, type Engine } from '../store/connection.js';
import type { RecipientOutcome } from '../store/schema.js';
import type { RecipientState, RecipientUpdate } from './outcome-policy.js';
import type { ExpiredLease } from './lease-transitions.js';

export type ClaimRequest = QueueClaim;

/** A claimed mail's row with what its send needs (undefined: no content is stored for it). */
export type ClaimedMail = ClaimedRow & { payload: DeliveryPayload | undefined };

export interface DeliveryPayload {
  mailId: number;
  raw: Buffer | null;
  envelopeFrom: string;
  /** Who this attempt goes to: the envelope recipients still pending or deferred. */
  envelopeTo: string[];
  /** Every envelope recipient (distinct) with its outcome so far. */
  recipients: RecipientState[];
}

/**
 * Queued → Processing for up to `limit` due mails, oldest due first, with each one's payload; counts the
 * attempt and moves the counters (or adds their moves to `counts`, for a caller that writes them last).
 * PostgreSQL does it in one statement (`claimDueMailsWithPayload`: one round trip per batch). SQLite claims
 * them with one UPDATE whose subquery picks them (`claimDueMailsSqlite`, one text for every claim) and reads
 * the payloads: a single writer, so nothing interleaves within the transaction, and its statements are calls
 * rather than round trips.
 */
export async function claimDueMails(db: DbOrTrx, engine: Engine, claim: ClaimRequest): Promise<ClaimedMail[]> {
  if (engine === 'postgres') {
    const rows = await claimDueMailsWithPayload(db, claim);
    return rows.map(({ content_raw, content_envelope_from, envelope_addresses, envelope_outcomes, ...row }) => ({
      ...row,
      payload:
        content_envelope_from === null
          ? undefined
          : deliveryPayloadOf(
              row.id,
              content_raw,
              content_envelope_from,
              envelope_addresses.map((address, i) => ({ address, outcome: envelope_outcomes[i] ?? null })),
            ),
    }));
  }
  const rows = await claimDueMailsSqlite(db, claim);
  const payloads = await loadDeliveryPayloads(
    db,
    rows.map((row) => row.id),
  );
  return rows.map((row) => ({ ...row, payload: payloads.get(row.id) }));
}

const OUTCOMES: readonly string[] = ['pending', 'accepted', 'rejected', 'deferred', 'suppressed'] satisfies RecipientOutcome[];
const asOutcome = (value: string | null): RecipientOutcome | null =>
  value !== null && OUTCOMES.includes(value) ? (value as RecipientOutcome) : null;

/**
 * What the relay needs for one claimed mail, from its stored bytes and its envelope recipients in stored
 * order. Only recipients still open (pending, deferred, or unknown from before migration 005) are sent to;
 * a mail with none open (an operator's requeue of a finished mail) goes to every recipient not yet accepted.
 */
function deliveryPayloadOf(
  mailId: number,
  raw: Buffer | null,
  envelopeFrom: string,
  envelope: ReadonlyArray<{ address: string; outcome: string | null }>,
): DeliveryPayload {
  const recipients: RecipientState[] = [];
  for (const recipient of envelope) {
    if (!recipients.some((r) => r.address === recipient.address))
      recipients.push({ address: recipient.address, outcome: asOutcome(recipient.outcome) });
  }
  const open = recipients.filter((r) => r.outcome === null || r.outcome === 'pending' || r.outcome === 'deferred');
  // A suppressed recipient is never sent to (docs/lifecycle.md), even by a requeue.
  const targets = open.length > 0 ? open : recipients.filter((r) => r.outcome !== 'accepted' && r.outcome !== 'suppressed');
  const envelopeTo = (targets.length > 0 ? targets : recipients).map((r) => r.address);
  return { mailId, raw, envelopeFrom, envelopeTo, recipients };
}

/** The payloads of the given mails, read apart from their claim (SQLite). */
async function loadDeliveryPayloads(db: DbOrTrx, mailIds: number[]): Promise<Map<number, DeliveryPayload>> {
  const payloads = new Map<number, DeliveryPayload>();
  if (mailIds.length === 0) return payloads;
  const contents = await db
    .selectFrom('mail_contents')
    .select(['mail_id', 'raw', 'envelope_from'])
    .where('mail_id', 'in', mailIds)
    .execute();
  const recipients = await db
    .selectFrom('mail_recipients')
    .select(['mail_id', 'address', 'outcome'])
    .where('mail_id', 'in', mailIds)
    .where('kind', '=', 'envelope')
    .orderBy('mail_id')
    .orderBy('position')
    .execute();
  const envelopes = new Map<number, Array<{ address: string; outcome: string | null }>>();
  for (const recipient of recipients) {
    const list = envelopes.get(recipient.mail_id);
    if (list) list.push(recipient);
    else envelopes.set(recipient.mail_id, [recipient]);
  }
  for (const content of contents)
    payloads.set(
      content.mail_id,
      deliveryPayloadOf(content.mail_id, content.raw, content.envelope_from, envelopes.get(content.mail_id) ?? []),
    );
  return payloads;
}

/**
 * Stores each recipient's new outcome, written only while this worker's claim still holds the mail, like the
 * status change that follows it in the same transaction (a swept, stale claim writes neither). PostgreSQL: one
 * UPDATE joined to `unnest` of one array per column, whatever the group's size, so its text never changes and
 * the server parses and plans it once per connection (`PREPARED`); as a VALUES list of 50 rows it was parsed,
 * planned and compiled by Kysely on every flush. SQLite: one UPDATE joined to a VALUES list per 500
 * recipients (statements there are calls, not round trips, and are prepared once per text).
 */
export async function recordRecipientOutcomes(
  db: DbOrTrx,
  engine: Engine,
  updates: ReadonlyArray<RecipientUpdate & { leaseExpiresAt: number | null }>,
  owner: string,
  at: number,
): Promise<void> {
  if (updates.length === 0) return;
  if (engine === 'postgres') {
    await sql`${sql.raw(PREPARED)}
      update mail_recipients set outcome = v.outcome, reply = v.reply, updated_at = ${at}
      from unnest(${updates.map((u) => u.mailId)}::bigint[], ${updates.map((u) => u.address)}::text[],
        ${updates.map((u) => u.outcome)}::text[], ${updates.map((u) => u.reply)}::text[],
        ${updates.map((u) => u.leaseExpiresAt)}::bigint[]) as v (mail_id, address, outcome, reply, held_until)
      where mail_recipients.mail_id = v.mail_id and mail_recipients.kind = 'envelope' and mail_recipients.address = v.address
        and exists (select 1 from mail_queue q where q.mail_id = v.mail_id and q.lease_owner = ${owner}
          and q.lease_expires_at = v.held_until)`.execute(db);
    return;
  }
  // The updates as one JSON parameter read by `json_each`: one text for every flush (prepared once), not a
  // VALUES list Kysely compiles anew for each (mail/write/apply.ts does the same).
  for (let start = 0; start < updates.length; start += 500) {
    const rows = JSON.stringify(updates.slice(start, start + 500).map((u) => [u.mailId, u.address, u.outcome, u.reply, u.leaseExpiresAt]));
    await sql`
      with v (mail_id, address, outcome, reply, held_until) as (
        select cast(value ->> 0 as bigint), cast(value ->> 1 as text), cast(value ->> 2 as text), cast(value ->> 3 as text),
          cast(value ->> 4 as bigint)
        from json_each(${rows}))
      update mail_recipients set outcome = v.outcome, reply = v.reply, updated_at = ${at}
      from v
      where mail_recipients.mail_id = v.mail_id and mail_recipients.kind = 'envelope' and mail_recipients.address = v.address
        and exists (select 1 from mail_queue q where q.mail_id = v.mail_id and q.lease_owner = ${owner}
          and q.lease_expires_at = v.held_until)`.execute(db);
  }
}

/**
 * The leased mails (Processing, mail/leases.ts) with who holds each, read through the queue's partial index of
 * leases (migration 022), with what the sweeper's retry decision needs from the record.
 */
const leasedMails = (db: DbOrTrx) =>
  db
    .selectFrom('mail_queue')
    .innerJoin('mails', 'mails.id', 'mail_queue.mail_id')
    .select(['mail_queue.mail_id as id', 'mail_queue.lease_owner', 'mail_queue.attempts', 'mails.received_at', 'mails.send_at'])
    .where('mail_queue.lease_owner', 'is not', null);

/** Mails whose lease ran out by `now` (their worker died or hung), with who held each one. */
export function listExpiredLeases(db: DbOrTrx, now: number): Promise<ExpiredLease[]> {
  return leasedMails(db).where('mail_queue.lease_expires_at', '<=', now).execute();
}

/**
 * Mails still under a lease whose holder's heartbeat is stale (docs/operations.md#instances-and-heartbeats): the
 * process crashed or hangs, so its mails need not wait for their leases to run out. A holder with no heartbeat row
 * (a worker started on its own, as tests and benchmarks do) is left to its lease, and so is `self`, the asking
 * worker: it is running, whatever its heartbeat row says (after a store outage the row is stale until its next beat).
 */
export function listLeasesOfStaleInstances(db: DbOrTrx, now: number, self: string): Promise<ExpiredLease[]> {
  return leasedMails(db)
    .where('mail_queue.lease_expires_at', '>', now)
    .where('mail_queue.lease_owner', '!=', self)
    .where('mail_queue.lease_owner', 'in', (eb) =>
      eb
        .selectFrom('instances')
        .select('instances.id')
        .where(sql<number>`instances.last_heartbeat_at + instances.stale_after_ms`, '<', now),
    )
    .execute();
}

/** The mails this worker holds, at a graceful stop. */
export async function listLeasesOf(db: DbOrTrx, owner: string): Promise<number[]> {
  const rows = await db.selectFrom('mail_queue').select('mail_id').where('lease_owner', '=', owner).execute();
  return rows.map((row) => Number(row.mail_id));
}

/** The earliest due instant among the waiting mails, to know how long the worker may sleep (the claim's index). */
export async function findNextDueAt(db: DbOrTrx): Promise<number | undefined> {
  const row = await db
    .selectFrom('mail_queue')
    .select('due_at')
    .where('lease_owner', 'is', null)
    .orderBy('due_at')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.due_at);
}
