/**
 * The SQL of the webhook delivery log (store/migrations/007-webhooks.ts): test events and replays, which make
 * deliveries due again; the pages of deliveries with their attempts; and the log's retention.
 */
import type { DbOrTrx } from '../store/connection.js';
import type { WebhookAttemptRow, WebhookDeliveryRow } from '../store/schema.js';
import { EVENT_COLUMNS, insertDeliveries, type PendingEvent } from './webhook-dispatch.repository.js';

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
