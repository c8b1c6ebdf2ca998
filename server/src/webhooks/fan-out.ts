/**
 * The fan-out, in the caller's transaction: up to `batch` events not yet fanned out (oldest first; PostgreSQL
 * `FOR UPDATE SKIP LOCKED`), a delivery per matching enabled endpoint (type and application filters), the events
 * marked fanned out. The new deliveries are leased to the caller in the same insert, so the common case (an
 * event, then its first attempt at once) costs no separate claim.
 */
import type { Engine } from '../store/connection.js';
import type { Database, WebhookEndpointRow } from '../store/schema.js';
import type { Transaction } from 'kysely';
import type { WebhookJob } from './endpoint-queues.js';
import * as repo from './webhook-dispatch.repository.js';
import { listEnabledEndpoints } from './webhook.repository.js';

export interface FanOutResult {
  /** Events taken (a full batch: more may wait). */
  taken: number;
  /** The new deliveries, leased to the caller. */
  jobs: WebhookJob[];
  /** The enabled endpoints as this transaction read them; undefined when there was no event to fan out. */
  endpoints: WebhookEndpointRow[] | undefined;
}

export function matchesEndpoint(endpoint: WebhookEndpointRow, event: repo.PendingEvent): boolean {
  // An endpoint gets the events that happen while it exists (docs/webhooks.md): one created while events
  // still wait for a fan-out (a busy dispatcher) does not get those from before it.
  if (Number(event.created_at) < Number(endpoint.created_at)) return false;
  if (endpoint.api_key_id !== null && Number(endpoint.api_key_id) !== (event.api_key_id === null ? null : Number(event.api_key_id)))
    return false;
  const types = JSON.parse(endpoint.event_types) as string[];
  return types.length === 0 || types.includes(event.type);
}

export async function fanOutEvents(
  trx: Transaction<Database>,
  engine: Engine,
  request: { now: number; owner: string; leaseUntil: number; batch: number },
): Promise<FanOutResult> {
  const { now, owner, leaseUntil } = request;
  const events = await repo.pickPendingEvents(trx, engine, request.batch);
  if (events.length === 0) return { taken: 0, jobs: [], endpoints: undefined };
  const targets = await listEnabledEndpoints(trx);
  const bySeq = new Map(events.map((event) => [Number(event.seq), event]));
  const deliveries: repo.NewDelivery[] = [];
  for (const event of events) {
    for (const endpoint of targets) {
      if (!matchesEndpoint(endpoint, event)) continue;
      deliveries.push({
        endpoint_id: Number(endpoint.id),
        event_seq: Number(event.seq),
        event_id: event.id,
        event_type: event.type,
        mail_id: event.mail_id === null ? null : Number(event.mail_id),
        state: 'pending',
        next_attempt_at: leaseUntil,
        lease_owner: owner,
        created_at: now,
        updated_at: now,
      });
    }
  }
  const inserted = deliveries.length > 0 ? await repo.insertDeliveries(trx, deliveries) : [];
  await repo.markFannedOut(
    trx,
    events.map((event) => Number(event.seq)),
    now,
  );
  return {
    taken: events.length,
    jobs: inserted.map<WebhookJob>((row) => ({
      deliveryId: row.id,
      endpointId: row.endpoint_id,
      step: 0,
      owner,
      leaseUntil,
      event: bySeq.get(row.event_seq)!,
    })),
    endpoints: targets,
  };
}
