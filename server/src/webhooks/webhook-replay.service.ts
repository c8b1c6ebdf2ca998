/**
 * Deliveries an operator makes due (API, CLI): a test event to one endpoint, and the replay of one event or of
 * every delivery that failed for good since a time. Each is audited in its own transaction and wakes this
 * process's dispatcher. Part of the webhook service (webhook.service.ts).
 */
import { WEBHOOK_TEST_EVENT_TYPE, type ReplayWebhookBody, type WebhookEndpoint } from '@outbox/contract';
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import { newEventId } from '../events/application-events.repository.js';
import type { Store } from '../store/connection.js';
import { insertDeliveries } from './webhook-dispatch.repository.js';
import * as logRepo from './webhook-log.repository.js';

export interface WebhookReplayOptions {
  store: Store;
  clock: Clock;
  /** The endpoint by id; throws 404 `webhook_not_found` when there is none. */
  getEndpoint: (id: number) => Promise<WebhookEndpoint>;
  /** Deliveries became due outside the fan-out. */
  notifyQueued: () => void;
}

export function createWebhookReplay(options: WebhookReplayOptions) {
  const { store, clock, getEndpoint, notifyQueued } = options;
  const { db } = store;

  async function sendTestEvent(id: number, actor: string): Promise<{ eventId: string }> {
    const endpoint = await getEndpoint(id);
    const now = clock.now();
    const eventId = newEventId();
    await db.transaction().execute(async (trx) => {
      const payload = JSON.stringify({
        endpointId: id,
        message: 'A test event from Outbox: if its signature verifies, this endpoint is ready.',
      });
      const { seq } = await logRepo.insertTestEvent(trx, { id: eventId, type: WEBHOOK_TEST_EVENT_TYPE, created_at: now, payload });
      await insertDeliveries(trx, [
        {
          endpoint_id: id,
          event_seq: seq,
          event_id: eventId,
          event_type: WEBHOOK_TEST_EVENT_TYPE,
          mail_id: null,
          state: 'pending',
          next_attempt_at: now,
          lease_owner: null,
          created_at: now,
          updated_at: now,
        },
      ]);
      await insertAuditEntries(trx, [
        { at: now, actor, action: 'webhook.test', target: `webhook:${id}`, after: { eventId, url: endpoint.url } },
      ]);
    });
    notifyQueued();
    return { eventId };
  }

  async function replay(id: number, body: ReplayWebhookBody, actor: string): Promise<{ queued: number }> {
    await getEndpoint(id);
    const now = clock.now();
    let queued: number;
    if ('eventId' in body) {
      const event = await logRepo.findEventById(db, body.eventId);
      if (!event) throw notFound('event_not_found', `body.eventId: no event has id ${body.eventId} (events are kept RETENTION_DAYS).`);
      queued = await db.transaction().execute(async (trx) => {
        const n = await logRepo.requeueEvent(trx, id, event, now);
        await insertAuditEntries(trx, [
          { at: now, actor, action: 'webhook.replay', target: `webhook:${id}`, after: { eventId: body.eventId, queued: n } },
        ]);
        return n;
      });
    } else {
      const since = Date.parse(body.failedSince);
      if (Number.isNaN(since)) throw badRequest('invalid_date', 'body.failedSince must be a date-time such as 2026-11-26T10:00:00Z.');
      queued = await db.transaction().execute(async (trx) => {
        const n = await logRepo.requeueFailedSince(trx, id, since, now);
        await insertAuditEntries(trx, [
          { at: now, actor, action: 'webhook.replay', target: `webhook:${id}`, after: { failedSince: body.failedSince, queued: n } },
        ]);
        return n;
      });
    }
    if (queued > 0) notifyQueued();
    return { queued };
  }

  return { sendTestEvent, replay };
}
