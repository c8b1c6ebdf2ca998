/**
 * The delivery worker on a real store, against the test relay (a real SMTP peer on loopback), on a
 * ManualClock: what the worker and per-recipient tests share. Retries become due when the test advances the
 * clock, never by sleeping. `close()` stops every worker at once (grace 0), closes its transports and the
 * relay, and closes the store.
 */
import type { ApiKeyPrincipal } from '../../src/auth/auth.service.js';
import { createRelayRouter, type RelayRouter } from '../../src/delivery/relay-router.js';
import { createRelayTransport, type RelayTransport } from '../../src/delivery/relay-transport.js';
import { routingDirectoryFor } from '../../src/relays/routing-table.js';
import { createRetryPolicy, type RetryPolicyOptions } from '../../src/delivery/retry-policy.js';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/delivery/worker.js';
import { createTestContext, type TestContext } from './context.js';
import { startTestRelay, type TestRelay } from './test-relay.js';

export const MINUTE = 60_000;

export interface WorkerOptions {
  /** Another relay, e.g. a closed port; the harness's relay by default. */
  relayUrl?: string;
  /** Retry policy; by default 3 attempts, backoff from one minute, no jitter, a day's age limit. */
  retry?: RetryPolicyOptions;
  leaseMs?: number;
  concurrency?: number;
  /** The relay transport's connection and socket timeouts (15 s by default). */
  relayTimeoutMs?: number;
  /** One envelope per recipient with this return path (as BOUNCE_DOMAIN does, per-recipient-send.ts). */
  returnPath?: (mailId: number, recipient: number) => string;
}

export interface WorkerHarness {
  context: TestContext;
  relay: TestRelay;
  /** An API key "app", for submissions. */
  principal: ApiKeyPrincipal;
  /** Starts a worker on the store and clock (polling every 20 ms, outcome flush after 1 ms). */
  startWorker(options?: WorkerOptions): DeliveryWorker;
  close(): Promise<void>;
}

export async function createWorkerHarness(): Promise<WorkerHarness> {
  const context = await createTestContext();
  const relay = await startTestRelay();
  const key = await context.services.auth.createApiKey('app');
  const principal = (await context.services.auth.findApiKeyPrincipal(key))!;
  const workers: DeliveryWorker[] = [];
  const transports: RelayTransport[] = [];
  const routers: RelayRouter[] = [];
  return {
    context,
    relay,
    principal,
    startWorker(options = {}) {
      // Generous: on a loaded machine a burst of synchronous SQLite commits (1,000 dequeues at once) holds the event
      // loop for seconds, and a relay's greeting read after the timer counts as a timeout (a retry the test never sees).
      const timeoutMs = options.relayTimeoutMs ?? 15_000;
      const transport = createRelayTransport(options.relayUrl ?? relay.url, { connectionTimeoutMs: timeoutMs, socketTimeoutMs: timeoutMs });
      transports.push(transport);
      // As main.ts: named relays and routes when the store has routes (docs/relays.md), else `transport` alone.
      const router = createRelayRouter({
        directory: routingDirectoryFor(context.store),
        defaultTransport: transport,
        createTransport: (relay) =>
          createRelayTransport(relay.url, {
            maxConnections: relay.maxConnections,
            connectionTimeoutMs: timeoutMs,
            socketTimeoutMs: timeoutMs,
            tls: { mode: relay.tls },
            ...(relay.credentials ? { auth: { user: relay.credentials.username, pass: relay.credentials.password } } : {}),
          }),
      });
      routers.push(router);
      const worker = createDeliveryWorker({
        store: context.store,
        clock: context.clock,
        transport,
        router,
        retryPolicy: createRetryPolicy({ maxAttempts: 3, baseDelayMs: MINUTE, jitter: 0, maxAgeMs: 24 * 60 * MINUTE, ...options.retry }),
        concurrency: options.concurrency ?? 10,
        leaseMs: options.leaseMs ?? MINUTE,
        pollIntervalMs: 20,
        flushDelayMs: 1,
        ...(options.returnPath ? { returnPath: options.returnPath } : {}),
      });
      worker.start();
      workers.push(worker);
      return worker;
    },
    async close() {
      await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 0 })));
      for (const router of routers.splice(0)) await router.close();
      for (const transport of transports.splice(0)) await transport.close();
      await relay.close();
      await context.close();
    },
  };
}
