/**
 * The SQL of webhook dispatch (store/migrations/007-webhooks.ts): the fan-out of application events into
 * deliveries, the claim of due deliveries under a lease, the outcome of each attempt, and the leases given back.
 * PostgreSQL picks with FOR UPDATE SKIP LOCKED, so instances fan out and claim disjoint rows without waiting;
 * SQLite has one writer, so a pick and its update in one transaction cannot interleave with another.
 */
import { sql, type Insertable } from 'kysely';
import type { DbOrTrx, Engine } from '../store/connection.js';
import type { ApplicationEventRow, WebhookDeliveryTable } from '../store/schema.js';

/** Rows per multi-row statement: far under SQLite's bound parameters. */
const CHUNK = 400;
export type PendingEvent = Pick<ApplicationEventRow, 'seq' | 'id' | 'type' | 'mail_id' | 'api_key_id' | 'created_at' | 'payload'>;
export const EVENT_COLUMNS = ['seq', 'id', 'type', 'mail_id', 'api_key_id', 'created_at', 'payload'] as const;

/** Events not fanned out yet, oldest first (the partial index on seq); locked on PostgreSQL, skipping others' picks. */
export async function pickPendingEvents(db: DbOrTrx, engine: Engine, limit: number): Promise<PendingEvent[]> {
  let query = db.selectFrom('application_events').select(EVENT_COLUMNS).where('fanned_out_at', 'is', null).orderBy('seq').limit(limit);
  if (engine === 'postgres') query = query.forUpdate().skipLocked();
  return query.execute();
}

export async function markFannedOut(db: DbOrTrx, seqs: number[], at: number): Promise<void> {
  for (let start = 0; start < seqs.length; start += CHUNK) {
    await db
      .updateTable('application_events')
      .set({ fanned_out_at: at })
      .where('seq', 'in', seqs.slice(start, start + CHUNK))
      .execute();
  }
}

/** A delivery as the fan-out makes it: every column of the table's but its id and step, due at once. */
export type NewDelivery = Required<Omit<Insertable<WebhookDeliveryTable>, 'id' | 'step'>> & { next_attempt_at: number };

/**
 * Inserts deliveries (an existing (endpoint, event) pair is left alone) and answers the ids of those it
 * inserted with what dispatch needs of them.
 */
export async function insertDeliveries(
  db: DbOrTrx,
  deliveries: NewDelivery[],
): Promise<Array<{ id: number; endpoint_id: number; event_seq: number }>> {
  const inserted: Array<{ id: number; endpoint_id: number; event_seq: number }> = [];
  for (let start = 0; start < deliveries.length; start += CHUNK) {
    const rows = await db
      .insertInto('webhook_deliveries')
      .values(deliveries.slice(start, start + CHUNK))
      .onConflict((oc) => oc.columns(['endpoint_id', 'event_seq']).doNothing())
      .returning(['id', 'endpoint_id', 'event_seq'])
      .execute();
    for (const row of rows) inserted.push({ id: Number(row.id), endpoint_id: Number(row.endpoint_id), event_seq: Number(row.event_seq) });
  }
  return inserted;
}

export interface ClaimedDelivery {
  id: number;
  endpoint_id: number;
  event_seq: number;
  step: number;
  state: string;
}

/**
 * Due deliveries of enabled endpoints, earliest due first, leased to `owner` until `leaseUntil`: their
 * `next_attempt_at` becomes the lease's end, so one whose dispatcher dies is due again then.
 */
export async function claimDueDeliveries(
  db: DbOrTrx,
  engine: Engine,
  claim: { now: number; limit: number; owner: string; leaseUntil: number },
): Promise<ClaimedDelivery[]> {
  let due = db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('next_attempt_at', 'is not', null)
    .where('next_attempt_at', '<=', claim.now)
    .where('endpoint_id', 'in', (eb) => eb.selectFrom('webhook_endpoints').select('id').where('enabled', '=', 1))
    .orderBy('next_attempt_at')
    .limit(claim.limit);
  if (engine === 'postgres') due = due.forUpdate().skipLocked();
  const ids = (await due.execute()).map((row) => row.id);
  if (ids.length === 0) return [];
  const rows = await db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: claim.leaseUntil, lease_owner: claim.owner })
    .where('id', 'in', ids)
    .where('next_attempt_at', '<=', claim.now)
    .returning(['id', 'endpoint_id', 'event_seq', 'step', 'state'])
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    endpoint_id: Number(r.endpoint_id),
    event_seq: Number(r.event_seq),
    step: r.step,
    state: r.state,
  }));
}

/** The events' bodies by seq. */
export async function loadEvents(
  db: DbOrTrx,
  seqs: number[],
): Promise<Map<number, Pick<ApplicationEventRow, 'seq' | 'id' | 'type' | 'created_at' | 'payload'>>> {
  const events = new Map<number, Pick<ApplicationEventRow, 'seq' | 'id' | 'type' | 'created_at' | 'payload'>>();
  const distinct = [...new Set(seqs)];
  for (let start = 0; start < distinct.length; start += CHUNK) {
    const rows = await db
      .selectFrom('application_events')
      .select(['seq', 'id', 'type', 'created_at', 'payload'])
      .where('seq', 'in', distinct.slice(start, start + CHUNK))
      .execute();
    for (const row of rows) events.set(Number(row.seq), row);
  }
  return events;
}

export interface AttemptOutcome {
  deliveryId: number;
  endpointId: number;
  /** The claim that made the attempt: its outcome is written only while that claim still holds the delivery. */
  owner: string;
  at: number;
  httpStatus: number | null;
  durationMs: number;
  response: string;
  error: string | null;
  succeeded: boolean;
  /** The delivery after it: its state, the schedule's step and when it is due next (null: finished). */
  state: string;
  step: number;
  nextAttemptAt: number | null;
}

/**
 * Logs the attempts and moves their deliveries: one INSERT and one UPDATE joined to a VALUES list per chunk,
 * the UPDATE conditional on the claim (a claim whose lease ran out, and whose delivery another took since,
 * writes its attempt to the log but cannot move the delivery).
 */
export async function recordAttempts(db: DbOrTrx, outcomes: readonly AttemptOutcome[]): Promise<void> {
  for (let start = 0; start < outcomes.length; start += CHUNK) {
    const chunk = outcomes.slice(start, start + CHUNK);
    await db
      .insertInto('webhook_attempts')
      .values(
        chunk.map((o) => ({
          delivery_id: o.deliveryId,
          endpoint_id: o.endpointId,
          at: o.at,
          http_status: o.httpStatus,
          duration_ms: o.durationMs,
          response: o.response,
          error: o.error,
          succeeded: o.succeeded ? 1 : 0,
        })),
      )
      .execute();
    const values = chunk.map(
      (o) =>
        sql`(cast(${o.deliveryId} as bigint), cast(${o.owner} as text), cast(${o.state} as text), cast(${o.step} as integer), cast(${o.nextAttemptAt} as bigint), cast(${o.at} as bigint))`,
    );
    await sql`
      with v (id, owner, state, step, next_attempt_at, at) as (values ${sql.join(values)})
      update webhook_deliveries set state = v.state, step = v.step, next_attempt_at = v.next_attempt_at, lease_owner = null,
        updated_at = v.at
      from v
      where webhook_deliveries.id = v.id and webhook_deliveries.lease_owner = v.owner`.execute(db);
  }
}
/** Gives this dispatcher's leased deliveries back at a graceful stop: due now, for whichever instance is free. */
export async function releaseLeases(db: DbOrTrx, owners: string[], now: number): Promise<void> {
  if (owners.length === 0) return;
  await db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: now, lease_owner: null })
    .where('lease_owner', 'in', owners)
    .where('next_attempt_at', 'is not', null)
    .execute();
}

/** The earliest due time of a delivery to an enabled endpoint (for the dispatcher's sleep). */
export async function findNextDue(db: DbOrTrx): Promise<number | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select('next_attempt_at')
    .where('next_attempt_at', 'is not', null)
    .where('endpoint_id', 'in', (eb) => eb.selectFrom('webhook_endpoints').select('id').where('enabled', '=', 1))
    .orderBy('next_attempt_at')
    .limit(1)
    .executeTakeFirst();
  return row?.next_attempt_at ?? undefined;
}
