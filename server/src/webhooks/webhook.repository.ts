/**
 * All SQL of webhooks (store/migrations/007-webhooks.ts): endpoints, the fan-out of application events into
 * deliveries, the claim of due deliveries under a lease, the outcome of each attempt, and the logs' reads.
 * PostgreSQL picks with FOR UPDATE SKIP LOCKED, so instances fan out and claim disjoint rows without waiting;
 * SQLite has one writer, so a pick and its update in one transaction cannot interleave with another.
 */
import { sql } from 'kysely';
import type { DbOrTrx, Engine } from '../store/connection.js';
import type { ApplicationEventRow, WebhookAttemptRow, WebhookDeliveryRow, WebhookEndpointRow } from '../store/schema.js';

/** Rows per multi-row statement: far under SQLite's bound parameters. */
const CHUNK = 400;

export type EndpointWithApplication = WebhookEndpointRow & { application_name: string | null };

function selectEndpoints(db: DbOrTrx) {
  return db
    .selectFrom('webhook_endpoints as e')
    .leftJoin('api_keys as k', 'k.id', 'e.api_key_id')
    .selectAll('e')
    .select('k.name as application_name');
}

export function listEndpoints(db: DbOrTrx): Promise<EndpointWithApplication[]> {
  return selectEndpoints(db).orderBy('e.id').execute();
}

export function findEndpoint(db: DbOrTrx, id: number): Promise<EndpointWithApplication | undefined> {
  return selectEndpoints(db).where('e.id', '=', id).executeTakeFirst();
}

export interface NewEndpoint {
  url: string;
  description: string;
  event_types: string;
  api_key_id: number | null;
  enabled: number;
  disabled_reason: string | null;
  secret: string;
  created_at: number;
  updated_at: number;
}

export async function insertEndpoint(db: DbOrTrx, endpoint: NewEndpoint): Promise<number> {
  const row = await db.insertInto('webhook_endpoints').values(endpoint).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

export type EndpointChange = Partial<
  Pick<
    WebhookEndpointRow,
    | 'url'
    | 'description'
    | 'event_types'
    | 'api_key_id'
    | 'enabled'
    | 'disabled_reason'
    | 'secret'
    | 'previous_secret'
    | 'previous_secret_expires_at'
    | 'failing_since'
  >
> & { updated_at: number };

/** True when the endpoint exists (and was changed). */
export async function updateEndpoint(db: DbOrTrx, id: number, change: EndpointChange): Promise<boolean> {
  const result = await db.updateTable('webhook_endpoints').set(change).where('id', '=', id).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Deletes the endpoint with its deliveries and attempts; true when it existed. */
export async function deleteEndpoint(db: DbOrTrx, id: number): Promise<boolean> {
  await db.deleteFrom('webhook_attempts').where('endpoint_id', '=', id).execute();
  await db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
  const result = await db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Attempts and successes per endpoint since `since` (the endpoints' 24-hour success rate). */
export async function countAttemptsSince(db: DbOrTrx, since: number): Promise<Map<number, { attempts: number; succeeded: number }>> {
  const rows = await db
    .selectFrom('webhook_attempts')
    .select(['endpoint_id', sql<number>`count(*)`.as('attempts'), sql<number>`coalesce(sum(succeeded), 0)`.as('succeeded')])
    .where('at', '>=', since)
    .groupBy('endpoint_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.endpoint_id), { attempts: Number(r.attempts), succeeded: Number(r.succeeded) }]));
}

export async function findApplication(db: DbOrTrx, id: number): Promise<{ id: number; name: string } | undefined> {
  return db.selectFrom('api_keys').select(['id', 'name']).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
}

export async function findApplicationByName(db: DbOrTrx, name: string): Promise<{ id: number; name: string } | undefined> {
  return db.selectFrom('api_keys').select(['id', 'name']).where('name', '=', name).where('revoked_at', 'is', null).executeTakeFirst();
}

// ---------------------------------------------------------------------------------------------------------
// Fan-out and dispatch

export type PendingEvent = Pick<ApplicationEventRow, 'seq' | 'id' | 'type' | 'mail_id' | 'api_key_id' | 'created_at' | 'payload'>;
const EVENT_COLUMNS = ['seq', 'id', 'type', 'mail_id', 'api_key_id', 'created_at', 'payload'] as const;

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

export function listEnabledEndpoints(db: DbOrTrx): Promise<WebhookEndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('enabled', '=', 1).execute();
}

export interface NewDelivery {
  endpoint_id: number;
  event_seq: number;
  event_id: string;
  event_type: string;
  mail_id: number | null;
  state: string;
  next_attempt_at: number;
  lease_owner: string | null;
  created_at: number;
  updated_at: number;
}

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

/** Endpoints that answered 2xx: no longer failing. */
export async function clearFailing(db: DbOrTrx, endpointIds: number[]): Promise<void> {
  if (endpointIds.length === 0) return;
  await db
    .updateTable('webhook_endpoints')
    .set({ failing_since: null })
    .where('id', 'in', endpointIds)
    .where('failing_since', 'is not', null)
    .execute();
}

/** Endpoints whose attempt failed: failing since then, unless they already were. */
export async function markFailing(db: DbOrTrx, endpointIds: number[], at: number): Promise<void> {
  if (endpointIds.length === 0) return;
  await db
    .updateTable('webhook_endpoints')
    .set({ failing_since: at })
    .where('id', 'in', endpointIds)
    .where('failing_since', 'is', null)
    .execute();
}

/** An endpoint that succeeded, then failed again within one group: failing since that failure. */
export async function restartFailing(db: DbOrTrx, endpointId: number, at: number): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ failing_since: at }).where('id', '=', endpointId).execute();
}

/**
 * Disables an enabled endpoint for `reason` (gone, failing); answers whether it did, so the caller audits
 * only a real change.
 */
export async function disableEndpoint(db: DbOrTrx, id: number, reason: string, at: number, failingBefore?: number): Promise<boolean> {
  let query = db
    .updateTable('webhook_endpoints')
    .set({ enabled: 0, disabled_reason: reason, updated_at: at })
    .where('id', '=', id)
    .where('enabled', '=', 1);
  if (failingBefore !== undefined) query = query.where('failing_since', '<=', failingBefore);
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
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

// ---------------------------------------------------------------------------------------------------------
// Test events, replay, logs, retention

export async function insertTestEvent(
  db: DbOrTrx,
  event: { id: string; type: string; created_at: number; payload: string },
): Promise<{ seq: number }> {
  // Fanned out at birth: it goes to the one endpoint it was made for, never through the fan-out.
  const row = await db
    .insertInto('application_events')
    .values({ ...event, mail_id: null, mail_seq: null, api_key_id: null, fanned_out_at: event.created_at })
    .returning('seq')
    .executeTakeFirstOrThrow();
  return { seq: Number(row.seq) };
}

export function findEventById(db: DbOrTrx, eventId: string): Promise<PendingEvent | undefined> {
  return db.selectFrom('application_events').select(EVENT_COLUMNS).where('id', '=', eventId).executeTakeFirst();
}

/** Makes the endpoint's delivery of one event due now, as a new round of the schedule; creates it if none. */
export async function requeueEvent(db: DbOrTrx, endpointId: number, event: PendingEvent, now: number): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ state: 'pending', step: 0, next_attempt_at: now, lease_owner: null, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('event_seq', '=', event.seq)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) > 0) return 1;
  const inserted = await insertDeliveries(db, [
    {
      endpoint_id: endpointId,
      event_seq: event.seq,
      event_id: event.id,
      event_type: event.type,
      mail_id: event.mail_id,
      state: 'pending',
      next_attempt_at: now,
      lease_owner: null,
      created_at: now,
      updated_at: now,
    },
  ]);
  return inserted.length;
}

/** Every delivery of the endpoint that failed for good since `since`, due again now; answers how many. */
export async function requeueFailedSince(db: DbOrTrx, endpointId: number, since: number, now: number): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ state: 'pending', step: 0, next_attempt_at: now, lease_owner: null, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('state', '=', 'failed')
    .where('updated_at', '>=', since)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** One page of an endpoint's deliveries, newest first (keyset on id). */
export function listDeliveries(
  db: DbOrTrx,
  endpointId: number,
  options: { state?: string | undefined; beforeId?: number | undefined; limit: number },
): Promise<WebhookDeliveryRow[]> {
  let query = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
  if (options.state !== undefined) query = query.where('state', '=', options.state);
  if (options.beforeId !== undefined) query = query.where('id', '<', options.beforeId);
  return query.orderBy('id', 'desc').limit(options.limit).execute();
}

/** One page of a mail's deliveries, oldest first (keyset on id, after `afterId`). */
export function listMailDeliveries(
  db: DbOrTrx,
  mailId: number,
  options: { afterId?: number | undefined; limit: number },
): Promise<WebhookDeliveryRow[]> {
  let query = db.selectFrom('webhook_deliveries').selectAll().where('mail_id', '=', mailId);
  if (options.afterId !== undefined) query = query.where('id', '>', options.afterId);
  return query.orderBy('id').limit(options.limit).execute();
}

export async function listAttempts(db: DbOrTrx, deliveryIds: number[]): Promise<WebhookAttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('id')
    .execute();
}

export async function listEndpointUrls(db: DbOrTrx, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('webhook_endpoints').select(['id', 'url']).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [Number(r.id), r.url]));
}

/** Retention: attempts older than `before`, and finished deliveries unchanged since then. */
export async function purgeWebhookLog(db: DbOrTrx, before: number): Promise<{ attempts: number; deliveries: number }> {
  const attempts = await db.deleteFrom('webhook_attempts').where('at', '<', before).executeTakeFirst();
  const deliveries = await db
    .deleteFrom('webhook_deliveries')
    .where('updated_at', '<', before)
    .where('state', 'in', ['succeeded', 'failed'])
    .executeTakeFirst();
  return { attempts: Number(attempts.numDeletedRows), deliveries: Number(deliveries.numDeletedRows) };
}

/**
 * The enabled endpoint failing the longest, and for how long (the alert rule `webhook_failing`,
 * alerts/alert-rules.ts's WebhookFailureSource); undefined when none is failing.
 */
export async function longestFailingEndpoint(db: DbOrTrx, now: number): Promise<{ endpointId: number; failingForMs: number } | undefined> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'failing_since'])
    .where('enabled', '=', 1)
    .where('failing_since', 'is not', null)
    .orderBy('failing_since')
    .limit(1)
    .executeTakeFirst();
  return row && row.failing_since !== null ? { endpointId: Number(row.id), failingForMs: now - Number(row.failing_since) } : undefined;
}
