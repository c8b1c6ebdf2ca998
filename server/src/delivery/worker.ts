/**
 * The delivery worker (PRODUCT.md §1): claims due Queued mails in batches under a lease, hands each to the
 * relay, and records every outcome with its attempt in the event log. Outcomes are written in small groups
 * (one transaction per flush) so that a durable commit is not paid once per mail; a crash before a flush
 * leaves those mails in Processing, and the lease sweeper returns them to Queued (at-least-once).
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { MailStatus } from '@outbox/contract';
import type { Clock } from '../clock.js';
import type { Store } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { adjustStatusCounts, insertEvents, type NewEvent } from '../mail/mail.repository.js';
import type { DeliveryOutcome, RelayTransport } from './relay-transport.js';
import type { RetryPolicy } from './retry-policy.js';
import * as queue from './queue.repository.js';

export interface WorkerLogger {
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

export interface DeliveryWorkerOptions {
  store: Store;
  clock: Clock;
  transport: RelayTransport;
  retryPolicy: RetryPolicy;
  /** Sends in flight at once; match the relay pool's connections times a few. */
  concurrency?: number;
  /** Mails claimed per query. */
  batchSize?: number;
  leaseMs?: number;
  /** Longest sleep when nothing is due and nobody wakes the worker. */
  pollIntervalMs?: number;
  /** How often expired leases are looked for. */
  sweepIntervalMs?: number;
  /** Outcomes are written at the latest this long after they arrive. */
  flushDelayMs?: number;
  workerId?: string;
  logger?: WorkerLogger;
  /** Told about every status change this worker writes (live updates, counters in other views). */
  onChange?: (ids: number[]) => void;
}

interface PendingResult {
  row: MailRow;
  outcome: DeliveryOutcome;
  at: number;
  /** How many flushes of this result failed already. */
  retries?: number;
}

const STATUS_BY_PERMANENT_OUTCOME = {
  sent: MailStatus.ProviderSent,
  rejected: MailStatus.ProviderError,
  invalid: MailStatus.Error,
} as const;

export function createDeliveryWorker(options: DeliveryWorkerOptions) {
  const { store, clock, transport, retryPolicy, logger } = options;
  const concurrency = options.concurrency ?? 20;
  const batchSize = options.batchSize ?? 50;
  const leaseMs = options.leaseMs ?? 60_000;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const sweepIntervalMs = options.sweepIntervalMs ?? Math.min(10_000, Math.max(100, leaseMs / 4));
  const flushDelayMs = options.flushDelayMs ?? 25;
  const workerId = options.workerId ?? `${os.hostname()}:${process.pid}:${crypto.randomBytes(3).toString('hex')}`;

  let isRunning = false;
  /** Set once stop() has returned: a send that finishes later must not touch the (maybe closed) store. */
  let hasStopped = false;
  let inFlight = 0;
  /**
   * Claimed mails whose outcome is not committed yet (sending, or waiting for the group commit). Bounded, so
   * a store that commits slower than the relay accepts slows claiming down instead of letting outcomes
   * queue up until their leases expire and the mails are sent twice.
   */
  let unrecorded = 0;
  const maxUnrecorded = concurrency * 3;
  let pending: PendingResult[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  let wakeUp: (() => void) | undefined;
  let loopDone: Promise<void> = Promise.resolve();
  let sweepTimer: NodeJS.Timeout | undefined;

  /** A wake that came while the loop was busy (claiming, say): the next sleep returns at once instead of missing it. */
  let wakeRequested = false;

  function wake(): void {
    const resolve = wakeUp;
    wakeUp = undefined;
    if (resolve) resolve();
    else wakeRequested = true;
  }

  function sleep(ms: number): Promise<void> {
    if (wakeRequested) {
      wakeRequested = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        wakeUp = undefined;
        resolve();
      }, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** What a result means for the mail: its next status, and when to try again if it goes back to Queued. */
  function decide(result: PendingResult): queue.AttemptResult & { type: string; detail: Record<string, unknown> } {
    const { row, outcome, at } = result;
    const base = { id: row.id, owner: workerId, leaseExpiresAt: row.lease_expires_at, now: at, reply: outcome.reply };
    const detail: Record<string, unknown> = {
      attempt: row.attempts,
      reply: outcome.reply,
      durationMs: Math.round(outcome.durationMs),
      worker: workerId,
    };
    if (outcome.kind === 'sent') {
      if (outcome.rejected.length > 0) detail.rejectedRecipients = outcome.rejected;
      return { ...base, toStatus: STATUS_BY_PERMANENT_OUTCOME.sent, providerSentAt: at, type: 'sent', detail };
    }
    if (outcome.kind === 'rejected')
      return { ...base, toStatus: MailStatus.ProviderError, type: 'rejected', detail: { ...detail, code: outcome.code } };
    if (outcome.kind === 'invalid') return { ...base, toStatus: MailStatus.Error, type: 'invalid', detail };
    const decision = retryPolicy.decide({ attempts: row.attempts, receivedAt: row.received_at, now: at, outcome: outcome.kind });
    if (outcome.kind === 'deferred') detail.code = outcome.code;
    if (decision.retry) {
      return {
        ...base,
        toStatus: MailStatus.Queued,
        nextAttemptAt: decision.nextAttemptAt,
        type: `${outcome.kind}-retry`,
        detail: { ...detail, nextAttemptAt: new Date(decision.nextAttemptAt).toISOString() },
      };
    }
    // Budget spent: a relay that kept deferring refused it in effect; one we never reached is our Error.
    const toStatus = outcome.kind === 'deferred' ? MailStatus.ProviderError : MailStatus.Error;
    return { ...base, toStatus, type: `${outcome.kind}-gave-up`, detail };
  }

  async function flush(): Promise<void> {
    flushTimer = undefined;
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    const decisions = batch.map(decide);
    const changed: number[] = [];
    try {
      await store.db.transaction().execute(async (trx) => {
        const deltas = new Map<number, number>();
        const events: NewEvent[] = [];
        const recorded = await queue.recordAttemptResults(trx, decisions);
        for (const decision of decisions) {
          if (!recorded.has(decision.id)) continue; // lease lost: someone else owns it now
          changed.push(decision.id);
          deltas.set(MailStatus.Processing, (deltas.get(MailStatus.Processing) ?? 0) - 1);
          deltas.set(decision.toStatus, (deltas.get(decision.toStatus) ?? 0) + 1);
          events.push({
            mailId: decision.id,
            at: decision.now,
            actor: `worker:${workerId}`,
            type: decision.type,
            fromStatus: MailStatus.Processing,
            toStatus: decision.toStatus,
            detail: decision.detail,
          });
        }
        await insertEvents(trx, events);
        await adjustStatusCounts(trx, deltas);
      });
      unrecorded -= batch.length;
      wake();
    } catch (error) {
      // Try again shortly (a deadlock or a lost connection is usually gone by then). Past the retries the
      // mails stay in Processing under our lease and the sweeper requeues them: sent again, never lost.
      const retries = batch[0]!.retries ?? 0;
      logger?.error({ err: error, mailIds: decisions.map((d) => d.id), retries }, 'could not record delivery outcomes');
      if (retries < 5 && !hasStopped) {
        for (const result of batch) result.retries = retries + 1;
        setTimeout(
          () => {
            pending.unshift(...batch);
            scheduleFlush();
          },
          50 * (retries + 1),
        ).unref();
      } else {
        unrecorded -= batch.length;
      }
      return;
    }
    if (changed.length > 0) options.onChange?.(changed);
  }

  function scheduleFlush(): void {
    if (pending.length >= batchSize) {
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = undefined;
      flushing = flushing.then(flush);
    } else if (!flushTimer) {
      flushTimer = setTimeout(() => {
        flushing = flushing.then(flush);
      }, flushDelayMs);
    }
  }

  async function deliver(row: MailRow, payload: queue.DeliveryPayload | undefined): Promise<void> {
    let outcome: DeliveryOutcome;
    if (!payload?.raw || payload.envelopeTo.length === 0) {
      outcome = {
        kind: 'invalid',
        reply: payload?.raw ? 'The mail has no recipients.' : 'No message content is stored for this mail.',
        durationMs: 0,
      };
    } else {
      outcome = await transport.send({ envelope: { from: payload.envelopeFrom, to: payload.envelopeTo }, raw: payload.raw });
    }
    if (hasStopped) return;
    if (outcome.kind !== 'sent') logger?.warn({ mailId: row.id, outcome: outcome.kind, reply: outcome.reply }, 'delivery attempt failed');
    pending.push({ row, outcome, at: clock.now() });
    scheduleFlush();
  }

  async function claimBatch(): Promise<number> {
    const now = clock.now();
    const limit = Math.min(batchSize, concurrency - inFlight, maxUnrecorded - unrecorded);
    const rows = await store.db.transaction().execute(async (trx) => {
      const claimed = await queue.claimDueMails(trx, store.engine, { now, limit, owner: workerId, leaseExpiresAt: now + leaseMs });
      if (claimed.length > 0)
        await adjustStatusCounts(
          trx,
          new Map([
            [MailStatus.Queued, -claimed.length],
            [MailStatus.Processing, claimed.length],
          ]),
        );
      return claimed;
    });
    if (rows.length === 0) return 0;
    unrecorded += rows.length;
    options.onChange?.(rows.map((r) => r.id));
    const payloads = await queue.loadDeliveryPayloads(
      store.db,
      rows.map((r) => r.id),
    );
    for (const row of rows) {
      inFlight += 1;
      void deliver(row, payloads.get(row.id))
        .catch((error: unknown) => {
          // No outcome will come: the lease sweeper returns the mail to the queue.
          unrecorded -= 1;
          logger?.error({ err: error, mailId: row.id }, 'delivery crashed');
        })
        .finally(() => {
          inFlight -= 1;
          wake();
        });
    }
    return rows.length;
  }

  async function loop(): Promise<void> {
    while (isRunning) {
      try {
        // Claim in batches: wait until half the capacity is free, so that one durable claim commit serves
        // many sends instead of one or two (a commit per mail would cap delivery at the disk's fsync rate).
        if (inFlight > concurrency / 2 || unrecorded > maxUnrecorded - Math.min(batchSize, concurrency) / 2) {
          await sleep(pollIntervalMs);
          continue;
        }
        const claimed = await claimBatch();
        if (claimed === 0) {
          const nextDue = await queue.findNextDueAt(store.db);
          const untilDue = nextDue === undefined ? pollIntervalMs : Math.max(0, nextDue - clock.now());
          // untilDue 0: a mail fell due since the claim (or another instance's claim holds it a moment):
          // try again almost at once rather than after a whole poll interval.
          await sleep(untilDue > 0 ? Math.min(pollIntervalMs, untilDue) : 5);
        }
      } catch (error) {
        logger?.error({ err: error }, 'worker loop failed; retrying');
        await sleep(pollIntervalMs);
      }
    }
  }

  async function sweepExpiredLeases(): Promise<number> {
    const now = clock.now();
    // A lease that ran out counts as an attempt whose relay never answered: past the budget, the mail ends.
    const givesUp = (lease: queue.ExpiredLease) =>
      !retryPolicy.decide({ attempts: lease.attempts, receivedAt: lease.received_at, now, outcome: 'unreachable' }).retry;
    const released = await store.db.transaction().execute(async (trx) => {
      const rows = await queue.releaseExpiredLeases(trx, now, givesUp);
      if (rows.length === 0) return rows;
      await insertEvents(
        trx,
        rows.map((r) => ({
          mailId: r.id,
          at: now,
          actor: `sweeper:${workerId}`,
          type: r.toStatus === MailStatus.Queued ? 'lease-expired' : 'lease-expired-gave-up',
          fromStatus: MailStatus.Processing,
          toStatus: r.toStatus,
          detail: { heldBy: r.lease_owner, attempt: r.attempts },
        })),
      );
      const deltas = new Map<number, number>([[MailStatus.Processing, -rows.length]]);
      for (const row of rows) deltas.set(row.toStatus, (deltas.get(row.toStatus) ?? 0) + 1);
      await adjustStatusCounts(trx, deltas);
      return rows;
    });
    if (released.length > 0) {
      logger?.warn(
        { mailIds: released.map((r) => r.id), heldBy: [...new Set(released.map((r) => r.lease_owner))] },
        'mails whose lease expired: returned to the queue, or ended where their retry budget is spent',
      );
      options.onChange?.(released.map((r) => r.id));
      wake();
    }
    return released.length;
  }

  return {
    workerId,
    wake,
    sweepExpiredLeases,
    /** Claims and delivers until stopped. */
    start(): void {
      if (isRunning) return;
      isRunning = true;
      loopDone = loop();
      sweepTimer = setInterval(() => {
        sweepExpiredLeases().catch((error: unknown) => logger?.error({ err: error }, 'lease sweep failed'));
      }, sweepIntervalMs);
      sweepTimer.unref();
    },
    /**
     * Graceful: stop claiming, let in-flight sends finish and write their outcomes. Sends still running
     * after `graceMs` (a relay that hangs) are given back to the queue at once instead of waiting for
     * their lease to expire; if one of them did reach the provider, it is sent again (at-least-once).
     */
    async stop({ graceMs = 10_000 }: { graceMs?: number } = {}): Promise<void> {
      isRunning = false;
      if (sweepTimer) clearInterval(sweepTimer);
      wake();
      await loopDone;
      const deadline = Date.now() + graceMs;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      if (flushTimer) clearTimeout(flushTimer);
      flushing = flushing.then(flush);
      await flushing;
      if (inFlight > 0) {
        const now = clock.now();
        const released = await store.db.transaction().execute(async (trx) => {
          const rows = await queue.releaseLeasesOf(trx, workerId, now);
          if (rows.length === 0) return rows;
          await insertEvents(
            trx,
            rows.map((r) => ({
              mailId: r.id,
              at: now,
              actor: `worker:${workerId}`,
              type: 'released',
              fromStatus: MailStatus.Processing,
              toStatus: MailStatus.Queued,
              detail: { reason: 'worker stopped while the send was in flight' },
            })),
          );
          await adjustStatusCounts(
            trx,
            new Map([
              [MailStatus.Processing, -rows.length],
              [MailStatus.Queued, rows.length],
            ]),
          );
          return rows;
        });
        logger?.warn({ mailIds: released.map((r) => r.id) }, 'stopped with sends still in flight: returned them to the queue');
        if (released.length > 0) options.onChange?.(released.map((r) => r.id));
      }
      hasStopped = true;
    },
    get inFlight() {
      return inFlight;
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
