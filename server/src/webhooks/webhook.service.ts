/**
 * Webhook endpoints as operators manage them (API, CLI): create with a secret shown once, change, disable,
 * enable, rotate the secret, delete, send a test event, replay, and read the delivery log. Every change is
 * written to the audit log in its own transaction. Rows never leave this file: it answers the contract's types.
 */
import {
  APPLICATION_EVENT_TYPES,
  MAX_WEBHOOK_DELIVERIES_LIMIT,
  WEBHOOK_TEST_EVENT_TYPE,
  type CreateWebhookBody,
  type ReplayWebhookBody,
  type UpdateWebhookBody,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookDeliveriesResponse,
  type WebhookDeliveryState,
  type WebhookDisabledReason,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
} from '@outbox/contract';
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import { newEventId } from '../events/application-events.repository.js';
import { AddressRefusedError, checkHostIsPublic } from '../net/address-guard.js';
import type { Store } from '../store/connection.js';
import type { WebhookAttemptRow, WebhookDeliveryRow } from '../store/schema.js';
import { newWebhookSecret } from './webhook-policy.js';
import * as repo from './webhook.repository.js';

/** How long the previous secret keeps signing after a rotation. */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 3_600_000;
const DAY_MS = 86_400_000;

export interface WebhookServiceOptions {
  store: Store;
  clock: Clock;
  /** WEBHOOK_ALLOW_PRIVATE: accept URLs on loopback and private addresses. */
  allowPrivate?: boolean;
}

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(Number(ms)));

export function createWebhookService(options: WebhookServiceOptions) {
  const { store, clock } = options;
  const { db } = store;
  const allowPrivate = options.allowPrivate ?? false;
  const queuedListeners = new Set<() => void>();

  function toEndpoint(row: repo.EndpointWithApplication, stats: { attempts: number; succeeded: number } | undefined): WebhookEndpoint {
    const attempts = stats?.attempts ?? 0;
    const succeeded = stats?.succeeded ?? 0;
    const now = clock.now();
    const previousExpires = row.previous_secret_expires_at === null ? null : Number(row.previous_secret_expires_at);
    return {
      id: Number(row.id),
      url: row.url,
      description: row.description,
      eventTypes: JSON.parse(row.event_types) as WebhookEndpoint['eventTypes'],
      application: row.api_key_id === null ? null : { id: Number(row.api_key_id), name: row.application_name ?? `#${row.api_key_id}` },
      enabled: row.enabled === 1,
      disabledReason: (row.disabled_reason as WebhookDisabledReason | null) ?? null,
      createdAt: iso(Number(row.created_at)),
      updatedAt: iso(Number(row.updated_at)),
      failingSince: isoOrNull(row.failing_since),
      previousSecretExpiresAt: previousExpires !== null && previousExpires > now ? iso(previousExpires) : null,
      last24h: { attempts, succeeded, failed: attempts - succeeded, successRate: attempts === 0 ? null : succeeded / attempts },
    };
  }

  async function statsOf(): Promise<Map<number, { attempts: number; succeeded: number }>> {
    return repo.countAttemptsSince(db, clock.now() - DAY_MS);
  }

  async function getEndpoint(id: number): Promise<WebhookEndpoint> {
    const row = await repo.findEndpoint(db, id);
    if (!row) throw notFound('webhook_not_found', `No webhook endpoint has id ${id}.`);
    return toEndpoint(row, (await statsOf()).get(id));
  }

  async function listEndpoints(): Promise<WebhookEndpoint[]> {
    const [rows, stats] = await Promise.all([repo.listEndpoints(db), statsOf()]);
    return rows.map((row) => toEndpoint(row, stats.get(Number(row.id))));
  }

  /** Checks a URL as given: http(s), a host, and (unless allowed) not a private address or a name resolving to one. */
  async function checkUrl(url: string, field: string): Promise<string> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw badRequest('invalid_url', `${field} is not a valid URL: write it as https://host/path.`);
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
      throw badRequest('invalid_url', `${field} must start with https:// or http://, got "${parsed.protocol}//…".`);
    if (!parsed.hostname) throw badRequest('invalid_url', `${field} names no host.`);
    if (!allowPrivate) {
      try {
        await checkHostIsPublic(parsed.hostname);
      } catch (error) {
        if (error instanceof AddressRefusedError) throw badRequest('webhook_url_not_public', `${field}: ${error.message}.`);
        throw error;
      }
    }
    return parsed.toString();
  }

  async function checkApplication(applicationId: number | null | undefined, field: string): Promise<number | null> {
    if (applicationId === undefined || applicationId === null) return null;
    const application = await repo.findApplication(db, applicationId);
    if (!application)
      throw badRequest('unknown_application', `${field} names no active API key (id ${applicationId}); see GET /api/v1/applications.`);
    return application.id;
  }

  function notifyQueued(): void {
    for (const listener of queuedListeners) listener();
  }

  function snapshot(endpoint: WebhookEndpoint) {
    return {
      url: endpoint.url,
      description: endpoint.description,
      eventTypes: endpoint.eventTypes,
      application: endpoint.application?.name ?? null,
      enabled: endpoint.enabled,
      disabledReason: endpoint.disabledReason,
    };
  }

  async function createEndpoint(body: CreateWebhookBody, actor: string): Promise<WebhookEndpointWithSecret> {
    const url = await checkUrl(body.url, 'body.url');
    const apiKeyId = await checkApplication(body.applicationId, 'body.applicationId');
    const now = clock.now();
    const secret = newWebhookSecret();
    const enabled = body.enabled ?? true;
    const id = await db.transaction().execute(async (trx) => {
      const id = await repo.insertEndpoint(trx, {
        url,
        description: body.description ?? '',
        event_types: JSON.stringify(body.eventTypes ?? []),
        api_key_id: apiKeyId,
        enabled: enabled ? 1 : 0,
        disabled_reason: enabled ? null : 'operator',
        secret,
        created_at: now,
        updated_at: now,
      });
      await insertAuditEntries(trx, [
        {
          at: now,
          actor,
          action: 'webhook.create',
          target: `webhook:${id}`,
          after: { url, eventTypes: body.eventTypes ?? [], applicationId: apiKeyId, enabled },
        },
      ]);
      return id;
    });
    return { ...(await getEndpoint(id)), secret };
  }

  async function updateEndpoint(id: number, body: UpdateWebhookBody, actor: string): Promise<WebhookEndpoint> {
    const before = await getEndpoint(id);
    const now = clock.now();
    const change: repo.EndpointChange = { updated_at: now };
    if (body.url !== undefined) change.url = await checkUrl(body.url, 'body.url');
    if (body.description !== undefined) change.description = body.description;
    if (body.eventTypes !== undefined) change.event_types = JSON.stringify(body.eventTypes);
    if (body.applicationId !== undefined) change.api_key_id = await checkApplication(body.applicationId, 'body.applicationId');
    if (body.enabled !== undefined && body.enabled !== before.enabled) {
      change.enabled = body.enabled ? 1 : 0;
      change.disabled_reason = body.enabled ? null : 'operator';
      // Enabled again: its failing streak starts afresh.
      if (body.enabled) change.failing_since = null;
    }
    await db.transaction().execute(async (trx) => {
      if (!(await repo.updateEndpoint(trx, id, change))) throw notFound('webhook_not_found', `No webhook endpoint has id ${id}.`);
      const after = await repo.findEndpoint(trx, id);
      await insertAuditEntries(trx, [
        {
          at: now,
          actor,
          action: 'webhook.update',
          target: `webhook:${id}`,
          before: snapshot(before),
          after: snapshot(toEndpoint(after!, undefined)),
        },
      ]);
    });
    // Enabled again: what waited for it is due.
    if (change.enabled === 1) notifyQueued();
    return getEndpoint(id);
  }

  async function deleteEndpoint(id: number, actor: string): Promise<WebhookEndpoint> {
    const before = await getEndpoint(id);
    const now = clock.now();
    await db.transaction().execute(async (trx) => {
      if (!(await repo.deleteEndpoint(trx, id))) throw notFound('webhook_not_found', `No webhook endpoint has id ${id}.`);
      await insertAuditEntries(trx, [{ at: now, actor, action: 'webhook.delete', target: `webhook:${id}`, before: snapshot(before) }]);
    });
    return before;
  }

  async function rotateSecret(id: number, actor: string): Promise<WebhookEndpointWithSecret> {
    const now = clock.now();
    const secret = newWebhookSecret();
    await db.transaction().execute(async (trx) => {
      const row = await repo.findEndpoint(trx, id);
      if (!row) throw notFound('webhook_not_found', `No webhook endpoint has id ${id}.`);
      await repo.updateEndpoint(trx, id, {
        secret,
        previous_secret: row.secret,
        previous_secret_expires_at: now + SECRET_ROTATION_OVERLAP_MS,
        updated_at: now,
      });
      await insertAuditEntries(trx, [
        {
          at: now,
          actor,
          action: 'webhook.rotate',
          target: `webhook:${id}`,
          after: { previousSecretExpiresAt: iso(now + SECRET_ROTATION_OVERLAP_MS) },
        },
      ]);
    });
    return { ...(await getEndpoint(id)), secret };
  }

  async function sendTestEvent(id: number, actor: string): Promise<{ eventId: string }> {
    const endpoint = await getEndpoint(id);
    const now = clock.now();
    const eventId = newEventId();
    await db.transaction().execute(async (trx) => {
      const payload = JSON.stringify({
        endpointId: id,
        message: 'A test event from Outbox: if its signature verifies, this endpoint is ready.',
      });
      const { seq } = await repo.insertTestEvent(trx, { id: eventId, type: WEBHOOK_TEST_EVENT_TYPE, created_at: now, payload });
      await repo.insertDeliveries(trx, [
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
      const event = await repo.findEventById(db, body.eventId);
      if (!event) throw notFound('event_not_found', `body.eventId: no event has id ${body.eventId} (events are kept RETENTION_DAYS).`);
      queued = await db.transaction().execute(async (trx) => {
        const n = await repo.requeueEvent(trx, id, event, now);
        await insertAuditEntries(trx, [
          { at: now, actor, action: 'webhook.replay', target: `webhook:${id}`, after: { eventId: body.eventId, queued: n } },
        ]);
        return n;
      });
    } else {
      const since = Date.parse(body.failedSince);
      if (Number.isNaN(since)) throw badRequest('invalid_date', 'body.failedSince must be a date-time such as 2026-11-26T10:00:00Z.');
      queued = await db.transaction().execute(async (trx) => {
        const n = await repo.requeueFailedSince(trx, id, since, now);
        await insertAuditEntries(trx, [
          { at: now, actor, action: 'webhook.replay', target: `webhook:${id}`, after: { failedSince: body.failedSince, queued: n } },
        ]);
        return n;
      });
    }
    if (queued > 0) notifyQueued();
    return { queued };
  }

  function toAttempt(row: WebhookAttemptRow): WebhookAttempt {
    return {
      at: iso(Number(row.at)),
      httpStatus: row.http_status,
      durationMs: row.duration_ms,
      response: row.response,
      error: row.error,
    };
  }

  async function toDeliveries(rows: WebhookDeliveryRow[]): Promise<WebhookDelivery[]> {
    const ids = rows.map((row) => Number(row.id));
    const [attempts, urls] = await Promise.all([
      repo.listAttempts(db, ids),
      repo.listEndpointUrls(db, [...new Set(rows.map((row) => Number(row.endpoint_id)))]),
    ]);
    const byDelivery = new Map<number, WebhookAttempt[]>();
    for (const attempt of attempts) {
      const list = byDelivery.get(Number(attempt.delivery_id)) ?? [];
      list.push(toAttempt(attempt));
      byDelivery.set(Number(attempt.delivery_id), list);
    }
    return rows.map((row) => ({
      id: Number(row.id),
      endpointId: Number(row.endpoint_id),
      endpointUrl: urls.get(Number(row.endpoint_id)) ?? '',
      eventId: row.event_id,
      eventType: row.event_type,
      mailId: row.mail_id === null ? null : Number(row.mail_id),
      state: row.state as WebhookDeliveryState,
      createdAt: iso(Number(row.created_at)),
      nextAttemptAt: isoOrNull(row.next_attempt_at),
      attempts: byDelivery.get(Number(row.id)) ?? [],
    }));
  }

  async function listDeliveries(
    id: number,
    query: { limit?: number | undefined; cursor?: string | undefined; state?: WebhookDeliveryState | undefined },
  ): Promise<WebhookDeliveriesResponse> {
    await getEndpoint(id);
    const limit = Math.min(query.limit ?? 50, MAX_WEBHOOK_DELIVERIES_LIMIT);
    let beforeId: number | undefined;
    if (query.cursor !== undefined) {
      if (!/^[1-9][0-9]{0,15}$/.test(query.cursor))
        throw badRequest('invalid_cursor', 'query.cursor is not a cursor this endpoint gave out (meta.nextCursor).');
      beforeId = Number(query.cursor);
    }
    const rows = await repo.listDeliveries(db, id, { state: query.state, beforeId, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return { data: await toDeliveries(page), meta: { nextCursor: rows.length > limit ? String(page[page.length - 1]!.id) : null } };
  }

  /** One page of a mail's deliveries, oldest first (keyset on id): 50 by default, at most 200. */
  async function listMailDeliveries(
    mailId: number,
    query: { limit?: number | undefined; cursor?: string | undefined } = {},
  ): Promise<WebhookDeliveriesResponse> {
    const limit = Math.min(query.limit ?? 50, MAX_WEBHOOK_DELIVERIES_LIMIT);
    let afterId: number | undefined;
    if (query.cursor !== undefined) {
      if (!/^[1-9][0-9]{0,15}$/.test(query.cursor))
        throw badRequest('invalid_cursor', 'query.cursor is not a cursor this endpoint gave out (meta.nextCursor).');
      afterId = Number(query.cursor);
    }
    const rows = await repo.listMailDeliveries(db, mailId, { afterId, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return { data: await toDeliveries(page), meta: { nextCursor: rows.length > limit ? String(page[page.length - 1]!.id) : null } };
  }

  async function findApplicationId(name: string): Promise<number> {
    const application = await repo.findApplicationByName(db, name);
    if (!application) throw notFound('unknown_application', `No active API key is named ${name}.`);
    return Number(application.id);
  }

  /** Retention: the delivery log older than `days`. */
  async function purgeLog(days: number): Promise<{ attempts: number; deliveries: number }> {
    return repo.purgeWebhookLog(db, clock.now() - days * DAY_MS);
  }

  return {
    eventTypes: APPLICATION_EVENT_TYPES,
    listEndpoints,
    getEndpoint,
    createEndpoint,
    updateEndpoint,
    deleteEndpoint,
    rotateSecret,
    sendTestEvent,
    replay,
    listDeliveries,
    listMailDeliveries,
    findApplicationId,
    purgeLog,
    /** Told when deliveries became due outside the fan-out (test, replay, enable): wakes this process's dispatcher. */
    onQueued(listener: () => void): () => void {
      queuedListeners.add(listener);
      return () => queuedListeners.delete(listener);
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
