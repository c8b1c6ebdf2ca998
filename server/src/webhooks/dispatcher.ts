/**
 * Webhook delivery (ARCHITECTURE.md#webhooks; docs/webhooks.md): the loop that turns application events into
 * signed HTTP requests. Its parts each have a file:
 *
 * 1. Fan-out (`fan-out.ts`): events into deliveries, leased to this dispatcher in the same insert.
 * 2. Claim (here): due deliveries (retries, replays, leases that ran out) under a lease; their `next_attempt_at`
 *    becomes the lease's end, so a dispatcher that dies gives them back by itself. `lease-owners.ts` counts what
 *    each claim still holds, given back at a graceful stop.
 * 3. Send (`endpoint-queues.ts`, `webhook-attempt.ts`): at most `concurrency` at once and
 *    `perEndpointConcurrency` per endpoint; a delivery whose lease is too close to its end to finish an attempt
 *    is left for whoever claims it next.
 * 4. Record (`webhook-commit.ts`, through the one group commit): each attempt logged, each delivery moved on
 *    (succeeded, retrying at its next time, failed), with the next fan-out or after `flushDelayMs`; the
 *    endpoints' failing state and the disables (`endpoint-disable.ts`: a 410 or five days of failure, audited).
 *
 * It wakes when the store's change feed says mails changed (each committed transition writes its events, and
 * on PostgreSQL the feed carries other instances' changes), when told (`wake`, by a test event or a replay in
 * this process), and otherwise polls every `pollIntervalMs` or sleeps until the next retry is due.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/connection.js';
import { newInstanceId } from '../instances/heartbeat.js';
import type { WebhookEndpointRow } from '../store/schema.js';
import { createEndpointQueues, type WebhookJob } from './endpoint-queues.js';
import { createLeaseOwners } from './lease-owners.js';
import { judgeOutcome, sendAttempt } from './webhook-attempt.js';
import { createWebhookCommit } from './webhook-commit.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from './webhook-policy.js';
import * as repo from './webhook-dispatch.repository.js';
import { listEnabledEndpoints } from './webhook.repository.js';
import { createWebhookSender, type HttpAttempt, type WebhookSender } from './webhook-sender.js';
import { createWakeableSleep } from '../wakeable-sleep.js';

export interface WebhookDispatcherOptions {
  store: Store;
  clock: Clock;
  logger?: Logger;
  /** WEBHOOK_TIMEOUT: one attempt, connection to the end of the answer. */
  timeoutMs?: number;
  /** WEBHOOK_RETRY_SCHEDULE: the delay before each attempt of a round, the first (0) included. */
  schedule?: readonly number[];
  /** WEBHOOK_ALLOW_PRIVATE: connect to loopback and private addresses too. */
  allowPrivate?: boolean;
  /** Requests in flight at once (WEBHOOK_CONCURRENCY). */
  concurrency?: number;
  perEndpointConcurrency?: number;
  fanOutBatch?: number;
  /** How long a claim holds its deliveries; a dispatcher that dies gives them back after this. */
  leaseMs?: number;
  pollIntervalMs?: number;
  flushDelayMs?: number;
  /** Least time between two fan-outs that did not take a full batch. */
  fanOutIntervalMs?: number;
  instanceId?: string;
  /** Tests inject the randomness of the jitter. */
  random?: () => number;
}

export interface WebhookDispatcher {
  start(): void;
  wake(): void;
  /** Finishes the requests in flight (up to a grace period), records them, and gives the rest back. */
  stop(): Promise<void>;
  /** Attempts this dispatcher made since it started. */
  attempts(): number;
}

export function createWebhookDispatcher(options: WebhookDispatcherOptions): WebhookDispatcher {
  const { store, clock, logger } = options;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const schedule = options.schedule ?? DEFAULT_RETRY_SCHEDULE_MS;
  const concurrency = options.concurrency ?? 32;
  const perEndpoint = Math.min(options.perEndpointConcurrency ?? 16, concurrency);
  const fanOutBatch = options.fanOutBatch ?? 500;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const fanOutIntervalMs = options.fanOutIntervalMs ?? 250;
  // A delivery whose lease is nearer its end than one attempt's time plus a second is not started: another
  // instance may claim it the moment the lease runs out. So a lease must leave room for a wait in the local
  // queue and an attempt.
  const leaseMarginMs = timeoutMs + 1_000;
  const leaseMs = Math.max(options.leaseMs ?? 60_000, leaseMarginMs + 5_000);
  const sender: WebhookSender = createWebhookSender({
    timeoutMs,
    allowPrivate: options.allowPrivate ?? false,
    maxSocketsPerHost: perEndpoint,
  });

  let endpoints = new Map<number, WebhookEndpointRow>();
  const jobs = createEndpointQueues({ concurrency, perEndpoint });
  const owners = createLeaseOwners(options.instanceId ?? newInstanceId());
  const commit = createWebhookCommit({
    store,
    clock,
    logger,
    // Every commit is an fsync on SQLite on the thread the worker shares (webhook-commit.ts).
    flushDelayMs: options.flushDelayMs ?? 500,
    onDisabled: (disabled) => disabled.forEach((change) => endpoints.delete(change.id)),
  });

  let attemptsMade = 0;
  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  let unsubscribe: (() => void) | undefined;
  /** Events may wait to be fanned out: a change was heard, or the last fan-out took a full batch. */
  let eventsWaiting = true;
  /** Deliveries may be due outside the fan-out (a test event, a replay, an enabled endpoint): claim now. */
  let claimWanted = true;
  let lastClaimAt = 0;
  /** The earliest due time of a delivery, as of the last claim; a retry falling due wakes the loop. */
  let nextDueAt: number | undefined;
  let lastFanOutAt = -Infinity;
  let lastFanOutFull = false;

  const sleeper = createWakeableSleep();
  const wake = sleeper.wake;
  /** A stopped dispatcher does not sleep: its loop finishes at once. */
  const sleep = (ms: number): Promise<void> => (running ? sleeper.sleep(ms) : Promise.resolve());

  async function refreshEndpoints(): Promise<void> {
    const rows = await listEnabledEndpoints(store.db);
    endpoints = new Map(rows.map((row) => [Number(row.id), row]));
  }

  /** One fan-out; answers how many events it took. */
  async function fanOut(): Promise<number> {
    const owner = owners.next();
    const { taken, jobs: fanned, endpoints: read } = await commit.fanOut({ owner, leaseMs, batch: fanOutBatch });
    if (read) endpoints = new Map(read.map((row) => [Number(row.id), row]));
    owners.hold(owner, fanned.length);
    for (const job of fanned) jobs.enqueue(job);
    return taken;
  }

  /** Claims due deliveries up to the free room; answers how many. */
  async function claim(room: number): Promise<number> {
    const now = clock.now();
    const owner = owners.next();
    const leaseUntil = now + leaseMs;
    const claimed = await store.db
      .transaction()
      .execute((trx) => repo.claimDueDeliveries(trx, store.engine, { now, limit: room, owner, leaseUntil }));
    if (claimed.length === 0) return 0;
    const events = await repo.loadEvents(
      store.db,
      claimed.map((c) => c.event_seq),
    );
    owners.hold(owner, claimed.length);
    for (const delivery of claimed) {
      const job = { deliveryId: delivery.id, endpointId: delivery.endpoint_id, step: delivery.step, owner, leaseUntil };
      const event = events.get(delivery.event_seq);
      if (!event) {
        // Its event is gone (purged past retention while the delivery waited): nothing left to send.
        const error = 'the event is no longer stored (past RETENTION_DAYS)';
        record(
          { ...job, event: { id: '', type: '', created_at: 0, payload: 'null' } },
          { httpStatus: null, retryAfter: undefined, response: '', error, durationMs: 0 },
          clock.now(),
          true,
        );
        continue;
      }
      jobs.enqueue({ ...job, event });
    }
    return claimed.length;
  }

  function pump(): void {
    if (!running) return;
    jobs.startWithinLimits((job) => {
      const endpoint = endpoints.get(job.endpointId);
      if (!endpoint || clock.now() > job.leaseUntil - leaseMarginMs) {
        // Disabled or deleted since, or the lease is nearly out: leave it to the next claim.
        owners.letGo(job.owner);
        return false;
      }
      void attempt(job, endpoint);
      return true;
    });
  }

  async function attempt(job: WebhookJob, endpoint: WebhookEndpointRow): Promise<void> {
    attemptsMade += 1;
    const at = clock.now();
    const result = await sendAttempt(sender, job, endpoint, at);
    jobs.finished(job);
    record(job, result, at, false);
    pump();
    // Room again: more events or due deliveries may be waiting for it.
    if ((eventsWaiting || claimWanted) && jobs.queued < concurrency) wake();
  }

  function record(job: WebhookJob, result: HttpAttempt, at: number, giveUp: boolean): void {
    const { outcome, gone } = judgeOutcome(job, result, at, { giveUp, schedule, now: clock.now(), random: options.random });
    commit.record(outcome, gone);
    owners.letGo(job.owner);
  }

  async function loop(): Promise<void> {
    while (running) {
      try {
        if (eventsWaiting && jobs.queued < concurrency) {
          // Every change heard wakes the loop (a worker publishes one per group commit); fanning out at each
          // would make a commit (an fsync on SQLite) per handful of events. Paced, each takes what came since.
          const wait = lastFanOutAt + fanOutIntervalMs - performance.now();
          if (wait > 0 && !lastFanOutFull) {
            await sleep(wait);
            continue;
          }
          eventsWaiting = false;
          lastFanOutAt = performance.now();
          lastFanOutFull = (await fanOut()) === fanOutBatch;
          if (lastFanOutFull) eventsWaiting = true;
        }
        pump();
        const now = clock.now();
        const room = concurrency * 2 - jobs.queued - jobs.inFlight;
        const claimDue = claimWanted || now - lastClaimAt >= pollIntervalMs || (nextDueAt !== undefined && nextDueAt <= now);
        if (claimDue && room > 0) {
          claimWanted = false;
          lastClaimAt = now;
          await refreshEndpoints();
          if (endpoints.size > 0) {
            const limit = Math.min(room, 200);
            if ((await claim(limit)) === limit) claimWanted = true;
            nextDueAt = await repo.findNextDue(store.db);
          } else nextDueAt = undefined;
          pump();
        }
        if ((eventsWaiting && jobs.queued < concurrency) || (claimWanted && concurrency * 2 - jobs.queued - jobs.inFlight > 0)) continue;
        const after = clock.now();
        const untilPoll = lastClaimAt + pollIntervalMs - after;
        const untilDue = nextDueAt === undefined ? untilPoll : nextDueAt - after;
        await sleep(Math.max(1, Math.min(untilPoll, untilDue)));
      } catch (error) {
        if (!running) break;
        logger?.error({ err: error }, 'webhook dispatch failed; trying again');
        await sleep(pollIntervalMs);
      }
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      // Every committed transition publishes its change after its events are written: they may wait now.
      unsubscribe = store.changes.subscribe(() => {
        eventsWaiting = true;
        wake();
      });
      loopDone = loop();
    },
    wake() {
      eventsWaiting = true;
      claimWanted = true;
      wake();
    },
    attempts: () => attemptsMade,
    async stop() {
      if (!running) return;
      running = false;
      unsubscribe?.();
      wake();
      await loopDone;
      const deadline = Date.now() + Math.min(timeoutMs, 5_000);
      while (jobs.inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      await commit.finish();
      jobs.clear();
      try {
        await repo.releaseLeases(store.db, owners.held(), clock.now());
      } catch (error) {
        logger?.warn({ err: error }, 'could not give back webhook deliveries at stop; their leases will run out');
      }
      sender.close();
    },
  };
}
