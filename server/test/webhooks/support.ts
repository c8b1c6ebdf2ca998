/**
 * What the webhook tests share: the app on a real store with the system clock (a receiver checks each
 * signature's timestamp against its own clock, as a real one would), a dispatcher per test, and events
 * appended as a committed transition appends them.
 */
import fs from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { WebhookDelivery, WebhookDeliveriesResponse, WebhookEndpointWithSecret } from '@outbox/contract';
import { buildApp, type AppServices } from '../../src/app.js';
import { LoginThrottle } from '../../src/auth/login-throttle.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { appendApplicationEvents, newEventId } from '../../src/events/application-events.repository.js';
import type { Store } from '../../src/store/connection.js';
import { createWebhookDispatcher, type WebhookDispatcher, type WebhookDispatcherOptions } from '../../src/webhooks/dispatcher.js';
import { auth, loginAs, makeTempDir, openTestStore, TEST_PASSWORD_COST, type TestContext } from '../support/context.js';
import { waitUntil } from '../support/net.js';

export interface WebhookContext {
  app: FastifyInstance;
  services: AppServices;
  store: Store;
  token: string;
  dispatchers: WebhookDispatcher[];
  /** A dispatcher on this store, stopped by `stopDispatchers`. */
  dispatcher(options?: Partial<WebhookDispatcherOptions>): WebhookDispatcher;
  stopDispatchers(): Promise<void>;
  close(): Promise<void>;
}

export async function openWebhookContext(options: { allowPrivate?: boolean; clock?: Clock } = {}): Promise<WebhookContext> {
  const dataDir = makeTempDir('outbox-webhooks-');
  const { store, dispose } = await openTestStore(dataDir);
  const clock = options.clock ?? systemClock;
  const { app, services } = await buildApp({
    store,
    clock,
    passwordCost: TEST_PASSWORD_COST,
    loginThrottle: new LoginThrottle(() => clock.now(), { maxFailuresPerClient: 1000, maxFailuresPerUsername: 1000 }),
    webhooks: { allowPrivate: options.allowPrivate ?? true },
  });
  await app.ready();
  const token = await loginAs({ app, services } as unknown as TestContext);
  const dispatchers: WebhookDispatcher[] = [];
  const context: WebhookContext = {
    app,
    services,
    store,
    token,
    dispatchers,
    dispatcher(overrides = {}) {
      const dispatcher = createWebhookDispatcher({ store, clock, allowPrivate: true, pollIntervalMs: 100, ...overrides });
      services.webhooks.onQueued(() => dispatcher.wake());
      dispatcher.start();
      dispatchers.push(dispatcher);
      return dispatcher;
    },
    async stopDispatchers() {
      await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
    },
    async close() {
      await context.stopDispatchers();
      await app.close();
      await dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return context;
}

export async function createEndpoint(context: WebhookContext, body: Record<string, unknown>): Promise<WebhookEndpointWithSecret> {
  const response = await context.app.inject({ method: 'POST', url: '/api/v1/webhooks', headers: auth(context.token), payload: body });
  if (response.statusCode !== 201) throw new Error(`create endpoint: ${response.statusCode} ${response.body}`);
  return (response.json() as { data: WebhookEndpointWithSecret[] }).data[0]!;
}

/** Deletes every endpoint, so the next test's events go to its own alone. */
export async function deleteAllEndpoints(context: WebhookContext): Promise<void> {
  for (const endpoint of await context.services.webhooks.listEndpoints())
    await context.services.webhooks.deleteEndpoint(endpoint.id, 'test');
}

let nextMailId = 1_000_000;

/** Appends events as a committed transition would, and tells the change feed (as the mail services do). */
export async function appendEvents(
  context: WebhookContext,
  events: Array<{ type: string; apiKeyId?: number | null; data?: Record<string, unknown> }>,
): Promise<string[]> {
  const now = Date.now();
  const rows = events.map((event) => {
    const mailId = nextMailId++;
    return {
      id: newEventId(),
      type: event.type,
      mail_id: mailId,
      mail_seq: 1,
      api_key_id: event.apiKeyId ?? null,
      created_at: now,
      payload: JSON.stringify(event.data ?? { mail: { id: mailId, subject: 'Hello' } }),
    };
  });
  await context.store.db.transaction().execute((trx) => appendApplicationEvents(trx, rows));
  context.store.changes.publish({ type: 'updated', ids: [] });
  return rows.map((row) => row.id);
}

export async function listDeliveries(context: WebhookContext, endpointId: number, query = ''): Promise<WebhookDeliveriesResponse> {
  const response = await context.app.inject({
    method: 'GET',
    url: `/api/v1/webhooks/${endpointId}/deliveries${query}`,
    headers: auth(context.token),
  });
  if (response.statusCode !== 200) throw new Error(`deliveries: ${response.statusCode} ${response.body}`);
  return response.json() as WebhookDeliveriesResponse;
}

/** Waits until the endpoint's delivery of `eventId` satisfies `check`; answers it. */
export async function waitForDelivery(
  context: WebhookContext,
  endpointId: number,
  eventId: string,
  check: (delivery: WebhookDelivery) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<WebhookDelivery> {
  let found: WebhookDelivery | undefined;
  await waitUntil(
    async () => {
      const { data } = await listDeliveries(context, endpointId, '?limit=200');
      found = data.find((d) => d.eventId === eventId);
      return found !== undefined && check(found);
    },
    { timeoutMs, intervalMs: 50, what },
  );
  return found!;
}
