/**
 * The webhook delivery log as operators read it (API, CLI): an endpoint's deliveries or a mail's, a page at a
 * time with their attempts, and the log's retention. Part of the webhook service (webhook.service.ts).
 */
import {
  MAX_WEBHOOK_DELIVERIES_LIMIT,
  type WebhookAttempt,
  type WebhookDeliveriesResponse,
  type WebhookDeliveryState,
  type WebhookEndpoint,
} from '@outbox/contract';
import type { Clock } from '../clock.js';
import { badRequest } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { WebhookDeliveryRow } from '../store/schema.js';
import { toAttempt, toDelivery } from './webhook-mapping.js';
import * as logRepo from './webhook-log.repository.js';
import { listEndpointUrls } from './webhook.repository.js';

const DAY_MS = 86_400_000;

export interface WebhookLogOptions {
  store: Store;
  clock: Clock;
  /** The endpoint by id; throws 404 `webhook_not_found` when there is none. */
  getEndpoint: (id: number) => Promise<WebhookEndpoint>;
}

export function createWebhookLog(options: WebhookLogOptions) {
  const { store, clock, getEndpoint } = options;
  const { db } = store;

  async function toDeliveries(rows: WebhookDeliveryRow[]) {
    const ids = rows.map((row) => Number(row.id));
    const [attempts, urls] = await Promise.all([
      logRepo.listAttempts(db, ids),
      listEndpointUrls(db, [...new Set(rows.map((row) => Number(row.endpoint_id)))]),
    ]);
    const byDelivery = new Map<number, WebhookAttempt[]>();
    for (const attempt of attempts) {
      const list = byDelivery.get(Number(attempt.delivery_id)) ?? [];
      list.push(toAttempt(attempt));
      byDelivery.set(Number(attempt.delivery_id), list);
    }
    return rows.map((row) => toDelivery(row, urls.get(Number(row.endpoint_id)) ?? '', byDelivery.get(Number(row.id)) ?? []));
  }

  /** A page of `rows` read one past `limit`: the page and the cursor of the next, the last id on it. */
  async function toPage(rows: WebhookDeliveryRow[], limit: number): Promise<WebhookDeliveriesResponse> {
    const page = rows.slice(0, limit);
    return { data: await toDeliveries(page), meta: { nextCursor: rows.length > limit ? String(page[page.length - 1]!.id) : null } };
  }

  async function listDeliveries(
    id: number,
    query: { limit?: number | undefined; cursor?: string | undefined; state?: WebhookDeliveryState | undefined },
  ): Promise<WebhookDeliveriesResponse> {
    await getEndpoint(id);
    const limit = Math.min(query.limit ?? 50, MAX_WEBHOOK_DELIVERIES_LIMIT);
    const beforeId = parseCursor(query.cursor);
    return toPage(await logRepo.listDeliveries(db, id, { state: query.state, beforeId, limit: limit + 1 }), limit);
  }

  /** One page of a mail's deliveries, oldest first (keyset on id): 50 by default, at most 200. */
  async function listMailDeliveries(
    mailId: number,
    query: { limit?: number | undefined; cursor?: string | undefined } = {},
  ): Promise<WebhookDeliveriesResponse> {
    const limit = Math.min(query.limit ?? 50, MAX_WEBHOOK_DELIVERIES_LIMIT);
    const afterId = parseCursor(query.cursor);
    return toPage(await logRepo.listMailDeliveries(db, mailId, { afterId, limit: limit + 1 }), limit);
  }

  /** Retention: the delivery log older than `days`. */
  async function purgeLog(days: number): Promise<{ attempts: number; deliveries: number }> {
    return logRepo.purgeWebhookLog(db, clock.now() - days * DAY_MS);
  }

  return { listDeliveries, listMailDeliveries, purgeLog };
}

/** A page's cursor is the id of the last delivery before it (meta.nextCursor); 400 for anything else. */
function parseCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  if (!/^[1-9][0-9]{0,15}$/.test(cursor))
    throw badRequest('invalid_cursor', 'query.cursor is not a cursor this endpoint gave out (meta.nextCursor).');
  return Number(cursor);
}
