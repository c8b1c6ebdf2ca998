/**
 * Webhook delivery (ARCHITECTURE.md#webhooks; docs/webhooks.md): the loop that turns application events into
 * signed HTTP requests.
 *
 * 1. Fan-out, one transaction: up to `fanOutBatch` events not yet fanned out (oldest first; PostgreSQL
 *    `FOR UPDATE SKIP LOCKED`), a delivery per matching enabled endpoint (type and application filters),
 *    the events marked fanned out. The new deliveries are leased to this dispatcher in the same insert, so the
 *    common case (an event, then its first attempt at once) costs no separate claim.
 * 2. Claim: due deliveries (retries, replays, leases that ran out) under a lease; their `next_attempt_at`
 *    becomes the lease's end, so a dispatcher that dies gives them back by itself.
 * 3. Send, at most `concurrency` at once and `perEndpointConcurrency` per endpoint; a delivery whose lease is
 *    too close to its end to finish an attempt is left for whoever claims it next.
 * 4. Record, in groups (in the next fan-out's transaction, or after `flushDelayMs`, or at 1,000 outcomes):
 *    each attempt logged, each delivery moved on (succeeded, retrying at its next time, failed), endpoints'
 *    failing state; a 410 or five days of failure disables the endpoint and says so in the audit log.
 *
 * It wakes when the store's change feed says mails changed (each committed transition writes its events, and
 * on PostgreSQL the feed carries other instances' changes), when told (`wake`, by a test event or a replay in
 * this process), and otherwise polls every `pollIntervalMs` or sleeps until the next retry is due.
 */
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Transaction } from 'kysely';
import type { Store } from '../store/connection.js';
import { newInstanceId } from '../instances/heartbeat.js';
import type { Database, WebhookEndpointRow } from '../store/schema.js';
import { FAILING_DISABLE_AFTER_MS, DEFAULT_RETRY_SCHEDULE_MS, judgeAttempt, signatureHeader, webhookBody } from './webhook-policy.js';
import * as repo from './webhook.repository.js';
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

interface Job {
  deliveryId: number;
  endpointId: number;
  step: number;
  owner: string;
  leaseUntil: number;
  event: { id: string; type: string; created_at: number; payload: string };
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
  // Outcomes are recorded after the requests were made, so this delay adds nothing to an event's lag; it
  // bounds how many attempts a crash leaves unrecorded (each is made again). Every flush is a commit, an fsync
  // on SQLite on the thread the worker shares.
  const flushDelayMs = options.flushDelayMs ?? 500;
  const fanOutIntervalMs = options.fanOutIntervalMs ?? 250;
  const instanceId = options.instanceId ?? newInstanceId();
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
  const queues = new Map<number, Job[]>();
  let queued = 0;
  let inFlight = 0;
  const inFlightPerEndpoint = new Map<number, number>();
  /** Claims with deliveries still held here (queued, sending or unrecorded), released at a graceful stop. */
  const owners = new Map<string, number>();
  let claimCounter = 0;
  const pending: repo.AttemptOutcome[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> | undefined;

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

  function newOwner(): string {
    claimCounter += 1;
    return `${instanceId}:${claimCounter}`;
  }

  function hold(owner: string, count: number): void {
    if (count > 0) owners.set(owner, (owners.get(owner) ?? 0) + count);
  }
  function letGo(owner: string): void {
    const left = (owners.get(owner) ?? 1) - 1;
    if (left <= 0) owners.delete(owner);
    else owners.set(owner, left);
  }

  function enqueue(job: Job): void {
    let queue = queues.get(job.endpointId);
    if (!queue) {
      queue = [];
      queues.set(job.endpointId, queue);
    }
    queue.push(job);
    queued += 1;
  }

  async function refreshEndpoints(): Promise<void> {
    const rows = await repo.listEnabledEndpoints(store.db);
    endpoints = new Map(rows.map((row) => [Number(row.id), row]));
  }

  function matches(endpoint: WebhookEndpointRow, event: repo.PendingEvent): boolean {
    // An endpoint gets the events that happen while it exists (docs/webhooks.md): one created while events
    // still wait for a fan-out (a busy dispatcher) does not get those from before it.
    if (Number(event.created_at) < Number(endpoint.created_at)) return false;
    if (endpoint.api_key_id !== null && Number(endpoint.api_key_id) !== (event.api_key_id === null ? null : Number(event.api_key_id)))
      return false;
    const types = JSON.parse(endpoint.event_types) as string[];
    return types.length === 0 || types.includes(event.type);
  }

  /** One fan-out transaction; answers how many events it took. */
  async function fanOut(): Promise<number> {
    const now = clock.now();
    const owner = newOwner();
    const leaseUntil = now + leaseMs;
    // The outcomes waiting to be recorded share this commit: on SQLite each commit is an fsync on the thread
    // the worker shares, and two per round made the worker lose most of its rate.
    const batch = flushing ? [] : pending.splice(0, pending.length);
    const goneNow = batch.length > 0 ? [...gone] : [];
    if (batch.length > 0) gone.clear();
    let disabled: Disabled = [];
    let result: { taken: number; jobs: Job[] };
    try {
      result = await store.db.transaction().execute(async (trx) => {
        if (batch.length > 0) disabled = await writeOutcomes(trx, batch, goneNow, now);
        return pickAndFanOut(trx, now, owner, leaseUntil);
      });
    } catch (error) {
      pending.unshift(...batch);
      for (const id of goneNow) gone.add(id);
      throw error;
    }
    if (batch.length > 0 && pending.length === 0 && flushTimer) {
      clearTimeout(flushTimer);
      flushTimer = undefined;
    }
    announceDisabled(disabled);
    const { taken, jobs } = result;
    hold(owner, jobs.length);
    for (const job of jobs) enqueue(job);
    return taken;
  }

  async function pickAndFanOut(
    trx: Transaction<Database>,
    now: number,
    owner: string,
    leaseUntil: number,
  ): Promise<{ taken: number; jobs: Job[] }> {
    const events = await repo.pickPendingEvents(trx, store.engine, fanOutBatch);
    if (events.length === 0) return { taken: 0, jobs: [] as Job[] };
    const targets = await repo.listEnabledEndpoints(trx);
    endpoints = new Map(targets.map((row) => [Number(row.id), row]));
    const bySeq = new Map(events.map((event) => [Number(event.seq), event]));
    const deliveries: repo.NewDelivery[] = [];
    for (const event of events) {
      for (const endpoint of targets) {
        if (!matches(endpoint, event)) continue;
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
      jobs: inserted.map<Job>((row) => ({
        deliveryId: row.id,
        endpointId: row.endpoint_id,
        step: 0,
        owner,
        leaseUntil,
        event: bySeq.get(row.event_seq)!,
      })),
    };
  }

  /** Claims due deliveries up to the free room; answers how many. */
  async function claim(room: number): Promise<number> {
    const now = clock.now();
    const owner = newOwner();
    const leaseUntil = now + leaseMs;
    const claimed = await store.db
      .transaction()
      .execute((trx) => repo.claimDueDeliveries(trx, store.engine, { now, limit: room, owner, leaseUntil }));
    if (claimed.length === 0) return 0;
    const events = await repo.loadEvents(
      store.db,
      claimed.map((c) => c.event_seq),
    );
    hold(owner, claimed.length);
    for (const delivery of claimed) {
      const event = events.get(delivery.event_seq);
      if (!event) {
        // Its event is gone (purged past retention while the delivery waited): nothing left to send.
        record(
          {
            deliveryId: delivery.id,
            endpointId: delivery.endpoint_id,
            step: delivery.step,
            owner,
            leaseUntil,
            event: { id: '', type: '', created_at: 0, payload: 'null' },
          },
          {
            httpStatus: null,
            retryAfter: undefined,
            response: '',
            error: 'the event is no longer stored (past RETENTION_DAYS)',
            durationMs: 0,
          },
          clock.now(),
          true,
        );
        continue;
      }
      enqueue({ deliveryId: delivery.id, endpointId: delivery.endpoint_id, step: delivery.step, owner, leaseUntil, event });
    }
    return claimed.length;
  }

  function pump(): void {
    if (!running) return;
    for (const [endpointId, queue] of queues) {
      while (queue.length > 0 && inFlight < concurrency && (inFlightPerEndpoint.get(endpointId) ?? 0) < perEndpoint) {
        const job = queue.shift()!;
        queued -= 1;
        const endpoint = endpoints.get(endpointId);
        if (!endpoint || clock.now() > job.leaseUntil - leaseMarginMs) {
          // Disabled or deleted since, or the lease is nearly out: leave it to the next claim.
          letGo(job.owner);
          continue;
        }
        void attempt(job, endpoint);
      }
      if (queue.length === 0) queues.delete(endpointId);
      if (inFlight >= concurrency) return;
    }
  }

  async function attempt(job: Job, endpoint: WebhookEndpointRow): Promise<void> {
    inFlight += 1;
    attemptsMade += 1;
    inFlightPerEndpoint.set(job.endpointId, (inFlightPerEndpoint.get(job.endpointId) ?? 0) + 1);
    const at = clock.now();
    const body = webhookBody(job.event);
    const timestamp = Math.floor(at / 1000);
    const secrets = [endpoint.secret];
    if (endpoint.previous_secret && endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > at)
      secrets.push(endpoint.previous_secret);
    let result: HttpAttempt;
    try {
      result = await sender.send({
        url: endpoint.url,
        headers: {
          'webhook-id': job.event.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, job.event.id, timestamp, body),
        },
        body,
      });
    } catch (error) {
      result = { httpStatus: null, retryAfter: undefined, response: '', error: String(error), durationMs: 0 };
    }
    inFlight -= 1;
    const left = (inFlightPerEndpoint.get(job.endpointId) ?? 1) - 1;
    if (left <= 0) inFlightPerEndpoint.delete(job.endpointId);
    else inFlightPerEndpoint.set(job.endpointId, left);
    record(job, result, at, false);
    pump();
    // Room again: more events or due deliveries may be waiting for it.
    if ((eventsWaiting || claimWanted) && queued < concurrency) wake();
  }

  function record(job: Job, result: HttpAttempt, at: number, giveUp: boolean): void {
    const step = job.step + 1;
    const verdict = giveUp
      ? ({ kind: 'failed' } as const)
      : judgeAttempt(result, step, { schedule, now: clock.now(), random: options.random });
    const outcome: repo.AttemptOutcome = {
      deliveryId: job.deliveryId,
      endpointId: job.endpointId,
      owner: job.owner,
      at,
      httpStatus: result.httpStatus,
      durationMs: result.durationMs,
      response: result.response,
      error: result.error,
      succeeded: verdict.kind === 'succeeded',
      state: verdict.kind === 'succeeded' ? 'succeeded' : verdict.kind === 'retry' ? 'retrying' : 'failed',
      step,
      nextAttemptAt: verdict.kind === 'retry' ? clock.now() + verdict.delayMs : null,
    };
    if (verdict.kind === 'gone') gone.add(job.endpointId);
    pending.push(outcome);
    letGo(job.owner);
    if (pending.length >= 1000) void flush();
    else flushTimer ??= setTimeout(() => void flush(), flushDelayMs);
  }

  const gone = new Set<number>();

  type Disabled = Array<{ id: number; reason: 'gone' | 'failing' }>;

  /**
   * Writes a group of outcomes in the caller's transaction: the attempts, the deliveries moved on, the
   * endpoints' failing streaks, and the disables (410, 5 days of failure) with their audit entries.
   */
  async function writeOutcomes(
    trx: Transaction<Database>,
    batch: repo.AttemptOutcome[],
    goneNow: number[],
    now: number,
  ): Promise<Disabled> {
    await repo.recordAttempts(trx, batch);
    // Per endpoint, in the order the answers came: a success ends a failing streak; the first failure
    // after the last success (or with none in this batch) starts one.
    const succeeded = new Set<number>();
    const failed = new Map<number, number>();
    for (const outcome of batch) {
      if (outcome.succeeded) {
        succeeded.add(outcome.endpointId);
        failed.delete(outcome.endpointId);
      } else if (!failed.has(outcome.endpointId)) failed.set(outcome.endpointId, outcome.at);
    }
    await repo.clearFailing(
      trx,
      [...succeeded].filter((id) => !failed.has(id)),
    );
    for (const [endpointId, at] of failed) {
      if (succeeded.has(endpointId)) await repo.restartFailing(trx, endpointId, at);
      else await repo.markFailing(trx, [endpointId], at);
    }
    const changes: Array<{ id: number; reason: 'gone' | 'failing' }> = [];
    for (const endpointId of goneNow)
      if (await repo.disableEndpoint(trx, endpointId, 'gone', now)) changes.push({ id: endpointId, reason: 'gone' });
    for (const endpointId of failed.keys()) {
      if (await repo.disableEndpoint(trx, endpointId, 'failing', now, now - FAILING_DISABLE_AFTER_MS))
        changes.push({ id: endpointId, reason: 'failing' });
    }
    if (changes.length > 0) {
      await insertAuditEntries(
        trx,
        changes.map((change) => ({
          at: now,
          actor: 'system',
          action: 'webhook.disable',
          target: `webhook:${change.id}`,
          after: { enabled: false, disabledReason: change.reason },
        })),
      );
    }
    return changes;
  }

  function announceDisabled(disabled: Disabled): void {
    for (const change of disabled) {
      endpoints.delete(change.id);
      logger?.warn(
        { endpointId: change.id, reason: change.reason },
        change.reason === 'gone' ? 'webhook endpoint answered 410 Gone: disabled' : 'webhook endpoint failing for 5 days: disabled',
      );
    }
  }

  /** Writes the pending outcomes in one transaction; on failure they stay pending and the next flush tries again. */
  function flush(): Promise<void> {
    if (flushTimer) {
      clearTimeout(flushTimer);
      flushTimer = undefined;
    }
    if (flushing) return flushing.then(() => (pending.length > 0 ? flush() : undefined));
    if (pending.length === 0) return Promise.resolve();
    const batch = pending.splice(0, pending.length);
    const goneNow = [...gone];
    gone.clear();
    flushing = (async () => {
      try {
        const now = clock.now();
        const disabled = await store.db.transaction().execute((trx) => writeOutcomes(trx, batch, goneNow, now));
        announceDisabled(disabled);
      } catch (error) {
        pending.unshift(...batch);
        for (const id of goneNow) gone.add(id);
        logger?.error({ err: error }, 'recording webhook attempts failed; retrying');
        if (running) flushTimer ??= setTimeout(() => void flush(), 1000);
      } finally {
        flushing = undefined;
      }
    })();
    return flushing;
  }

  async function loop(): Promise<void> {
    while (running) {
      try {
        if (eventsWaiting && queued < concurrency) {
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
        const room = concurrency * 2 - queued - inFlight;
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
        if ((eventsWaiting && queued < concurrency) || (claimWanted && concurrency * 2 - queued - inFlight > 0)) continue;
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
      while (inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      await flush();
      queues.clear();
      queued = 0;
      try {
        await repo.releaseLeases(store.db, [...owners.keys()], clock.now());
      } catch (error) {
        logger?.warn({ err: error }, 'could not give back webhook deliveries at stop; their leases will run out');
      }
      sender.close();
    },
  };
}
