/**
 * Webhook endpoints as operators manage them (API, CLI): create with a secret shown once, change, disable,
 * enable, rotate the secret, delete. With the test events and replays (webhook-replay.service.ts) and the delivery
 * log (webhook-log.service.ts) it makes the webhook service. Every change is written to the audit log in its own
 * transaction. Rows never leave the service: it answers the contract's types (webhook-mapping.ts).
 */
import {
  APPLICATION_EVENT_TYPES,
  type CreateWebhookBody,
  type UpdateWebhookBody,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
} from '@outbox/contract';
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import { AddressRefusedError, checkHostIsPublic } from '../net/address-guard.js';
import type { Store } from '../store/connection.js';
import { createWebhookLog } from './webhook-log.service.js';
import { iso, toEndpoint } from './webhook-mapping.js';
import { newWebhookSecret } from './webhook-policy.js';
import { createWebhookReplay } from './webhook-replay.service.js';
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

export function createWebhookService(options: WebhookServiceOptions) {
  const { store, clock } = options;
  const { db } = store;
  const allowPrivate = options.allowPrivate ?? false;
  const queuedListeners = new Set<() => void>();

  async function statsOf(): Promise<Map<number, { attempts: number; succeeded: number }>> {
    return repo.countAttemptsSince(db, clock.now() - DAY_MS);
  }

  async function getEndpoint(id: number): Promise<WebhookEndpoint> {
    const row = await repo.findEndpoint(db, id);
    if (!row) throw notFound('webhook_not_found', `No webhook endpoint has id ${id}.`);
    return toEndpoint(row, (await statsOf()).get(id), clock.now());
  }

  async function listEndpoints(): Promise<WebhookEndpoint[]> {
    const [rows, stats] = await Promise.all([repo.listEndpoints(db), statsOf()]);
    return rows.map((row) => toEndpoint(row, stats.get(Number(row.id)), clock.now()));
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
          after: snapshot(toEndpoint(after!, undefined, clock.now())),
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

  async function findApplicationId(name: string): Promise<number> {
    const application = await repo.findApplicationByName(db, name);
    if (!application) throw notFound('unknown_application', `No active API key is named ${name}.`);
    return Number(application.id);
  }

  const { sendTestEvent, replay } = createWebhookReplay({ store, clock, getEndpoint, notifyQueued });
  const { listDeliveries, listMailDeliveries, purgeLog } = createWebhookLog({ store, clock, getEndpoint });

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
