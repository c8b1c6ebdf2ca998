/**
 * The delivery worker's loop (docs/lifecycle.md): claims due Queued mails in batches under a lease, hands each
 * to the relay, and passes every outcome to the outcome group commit (outcome-commit.ts), which records it
 * with its attempt in the event log; what an outcome means is outcome-policy.ts. A crash before a commit
 * leaves those mails in Processing, and the lease sweeper (lease-sweeper.ts) returns them to Queued
 * (at-least-once). This file keeps the loop itself: wake and sleep, claiming with back-pressure, the send slots,
 * and the graceful stop that gives unfinished sends back to the queue. One mail's send is mail-send.ts, the leases
 * this worker holds (renewal, give-back, sweep) worker-leases.ts, the pause while the store does not answer
 * store-outage.ts.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { newInstanceId } from '../instances/heartbeat.js';
import { probeStore, type Store } from '../store/connection.js';
import { addByLane, createBulkCredit } from './claim-lanes.js';
import { createMailSender, isSendable, unsendableOutcomeOf, type SentAttempt } from './mail-send.js';
import { createOutcomeCommit } from './outcome-commit.js';
import type { RelayTransport } from './relay-transport.js';
import type { RelayRouter } from './relay-router.js';
import type { RetryPolicy } from './retry-policy.js';
import * as repository from './delivery.repository.js';
import { createStoreOutage } from './store-outage.js';
import { createWorkerLeases } from './worker-leases.js';
import { createWakeableSleep } from '../wakeable-sleep.js';

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
  logger?: Logger;
  /** Told about every status change this worker writes (live updates, counters in other views). */
  onChange?: (ids: number[]) => void;
  /**
   * BOUNCE_DOMAIN's return path for one recipient of a mail (bounces/return-path.ts; `recipient` is its place among
   * the mail's distinct envelope addresses): each recipient then gets an envelope of its own with it as sender, so a
   * bounce names the one recipient it is about (per-recipient-send.ts). Unset: one envelope for all, from the sender
   * stored at submission. The From header is never changed.
   */
  returnPath?: (mailId: number, recipient: number) => string;
  /**
   * Named relays and routes (relay-router.ts, docs/relays.md): when the store has routes, each mail goes out through
   * its route's relays, with failover; `transport` is then the default relay. With no route every mail goes to the
   * default relay through the router (its health, throttling). Unset: `transport` alone.
   */
  router?: RelayRouter | undefined;
}

export function createDeliveryWorker(options: DeliveryWorkerOptions) {
  const { store, clock, transport, retryPolicy, logger } = options;
  const concurrency = options.concurrency ?? 20;
  const batchSize = options.batchSize ?? 50;
  const leaseMs = options.leaseMs ?? 60_000;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  // Every 5 s at most: with a process's heartbeat stale after 15 s, a crashed worker's mails move within 20 s.
  const sweepIntervalMs = options.sweepIntervalMs ?? Math.min(5_000, Math.max(100, leaseMs / 4));
  // A process's worker holds its leases under the process's instance id (main.ts passes it); one of its own otherwise.
  const workerId = options.workerId ?? newInstanceId();

  let isRunning = false;
  /** Set once stop() has returned: a send that finishes later must not touch the (maybe closed) store. */
  let hasStopped = false;
  let inFlight = 0;
  /** Mails the relay accepted since start: the heartbeat's "delivered in the last minute" (instances/heartbeat.ts). */
  let deliveredCount = 0;
  /**
   * Claimed mails waiting for a send slot, with their payload. The worker claims one batch ahead of its free
   * slots (at most min(batchSize, concurrency) mails), so the slots never wait for a claim and each claim
   * commit serves a whole batch: on SQLite every commit is an fsync that blocks the thread, and half-size
   * claims made them a third of the worker's time. A mail waits here at most about one send's time.
   */
  const ready: repository.ClaimedMail[] = [];
  const claimAhead = Math.min(batchSize, concurrency);
  /**
   * Claimed mails whose outcome is not committed yet (sending, or waiting for the group commit). Bounded, so
   * a store that commits slower than the relay accepts slows claiming down instead of letting outcomes
   * queue up until their leases expire and the mails are sent twice.
   */
  let unrecorded = 0;
  const maxUnrecorded = concurrency * 3;
  const bulkCredit = createBulkCredit();
  /** A claim is under way (the loop's own, or one riding on an outcome commit): never two at once. */
  let isClaiming = false;
  const storeOutage = createStoreOutage(logger);
  let loopDone: Promise<void> = Promise.resolve();
  // A wake that comes while the loop is busy (claiming, say) makes the next sleep return at once.
  const { sleep, wake } = createWakeableSleep();
  const sender = createMailSender({ store, clock, transport, router: options.router, returnPath: options.returnPath });
  const leases = createWorkerLeases({
    store,
    clock,
    retryPolicy,
    workerId,
    leaseMs,
    sweepIntervalMs,
    logger,
    onChange: options.onChange,
    onSwept: () => wake(),
  });

  const outcomes = createOutcomeCommit({
    store,
    retryPolicy,
    workerId,
    batchSize,
    flushDelayMs: options.flushDelayMs ?? 25,
    logger,
    onChange: options.onChange,
    now: () => clock.now(),
    onSettled() {
      unrecorded -= 1;
      wake();
    },
    onCommitFailed: () => markStoreAway(),
    onCommitted() {
      // The loop's next probe finds the store at once.
      if (storeOutage.isAway) wake();
    },
    claimAlong: {
      request() {
        if (!isRunning || storeOutage.isAway || isClaiming) return undefined;
        const request = claimRequest();
        if (request) isClaiming = true;
        return request;
      },
      claimed(mails) {
        isClaiming = false;
        takeClaimed(mails);
        wake();
      },
    },
  });

  /**
   * The next claim, sized to what the worker may take now: one batch ahead of the free send slots, within
   * the bound on unrecorded outcomes. Undefined when it may take none.
   */
  function claimRequest(): repository.ClaimRequest | undefined {
    const limit = Math.min(batchSize, concurrency + claimAhead - inFlight - ready.length, maxUnrecorded - unrecorded);
    if (limit <= 0) return undefined;
    const now = clock.now();
    return { now, limit, owner: workerId, leaseExpiresAt: now + leaseMs, bulkMinimum: bulkCredit.takeMinimum(limit) };
  }

  function takeClaimed(mails: repository.ClaimedMail[]): void {
    if (mails.length === 0) return;
    unrecorded += mails.length;
    options.onChange?.(mails.map((m) => m.id));
    addByLane(ready, mails);
    fillSlots();
  }

  function markStoreAway(): void {
    storeOutage.markAway({ inFlight, claimedAhead: ready.length });
  }

  /**
   * One probe while the store is away. Mails claimed ahead are given back rather than sent: their leases
   * may be close to expiring, and the sweeper may already have handed them to another worker.
   */
  async function probeWhileAway(): Promise<void> {
    const unsent = ready.map((r) => r.id);
    if (unsent.length > 0) {
      await leases.release(unsent, 'the store did not answer before the send began');
      ready.splice(0, unsent.length);
      unrecorded -= unsent.length;
    } else {
      await probeStore(store.db);
    }
    storeOutage.markBack(inFlight);
  }

  async function deliver(mail: repository.ClaimedMail): Promise<void> {
    const { payload } = mail;
    let sent: SentAttempt;
    if (!isSendable(payload)) sent = { outcome: unsendableOutcomeOf(payload) };
    else {
      leases.hold(mail);
      try {
        sent = await sender.send(mail, payload);
      } finally {
        leases.letGo(mail.id);
      }
      // A renewal that took this mail in may still be under way: its outcome is conditional on the lease it ends with.
      const renewing = leases.renewal();
      if (renewing) await renewing;
    }
    if (hasStopped) return;
    const { outcome, trail } = sent;
    const { payload: _payload, ...row } = mail;
    if (outcome.kind === 'sent') deliveredCount += 1;
    if (outcome.kind !== 'sent') logger?.warn({ mailId: row.id, outcome: outcome.kind, reply: outcome.reply }, 'delivery attempt failed');
    outcomes.record({
      mail: row,
      outcome,
      at: clock.now(),
      ...(payload ? { recipients: { all: payload.recipients, targets: payload.envelopeTo } } : {}),
      ...(trail ? { relay: trail } : {}),
    });
  }

  /**
   * Starts sends from the ready mails while a slot is free. A mail whose lease has less than half its time left
   * (it waited for a slot while the machine or the process stalled) is given back to the queue instead: its
   * lease could expire during the send, and the sweeper would hand it to another worker, which would send it
   * too. Delivery is at least once, and a resend is allowed only for a mail in flight at a crash
   * (docs/lifecycle.md).
   */
  function fillSlots(): void {
    const runningLow: number[] = [];
    while (isRunning && !storeOutage.isAway && inFlight < concurrency && ready.length > 0) {
      const mail = ready.shift()!;
      if (mail.lease_expires_at !== null && mail.lease_expires_at - clock.now() < leaseMs / 2) {
        runningLow.push(mail.id);
        continue;
      }
      inFlight += 1;
      void deliver(mail)
        .catch((error: unknown) => {
          // No outcome will come: the lease sweeper returns the mail to the queue.
          unrecorded -= 1;
          logger?.error({ err: error, mailId: mail.id }, 'delivery crashed');
        })
        .finally(() => {
          inFlight -= 1;
          fillSlots();
          wake();
        });
    }
    if (runningLow.length > 0) giveBack(runningLow);
  }

  /** Give-backs under way: a stop waits for them before it lets the store close. */
  const givingBack = new Set<Promise<void>>();

  /** Mails claimed ahead whose lease ran low before their send began: back to Queued, then claimed afresh. */
  function giveBack(ids: number[]): void {
    const done: Promise<void> = leases
      .release(ids, 'the lease ran low before the send began')
      // Not given back (the store is away): the sweeper requeues them once their leases expire.
      .catch((error: unknown) => logger?.error({ err: error, mailIds: ids }, 'could not give back mails whose lease ran low'))
      .finally(() => {
        givingBack.delete(done);
        unrecorded -= ids.length;
        wake();
      });
    givingBack.add(done);
  }

  /** A claim in a transaction of its own: when no outcome commit is coming to carry it (at start, or idle). */
  async function claimBatch(): Promise<number> {
    const request = claimRequest();
    if (!request) return 0;
    isClaiming = true;
    try {
      const mails = await store.db.transaction().execute((trx) => repository.claimDueMails(trx, store.engine, request));
      takeClaimed(mails);
      return mails.length;
    } finally {
      isClaiming = false;
    }
  }

  async function loop(): Promise<void> {
    while (isRunning) {
      if (storeOutage.isAway) {
        await sleep(storeOutage.probeDelayMs);
        if (!isRunning) break;
        try {
          await probeWhileAway();
        } catch {
          storeOutage.probeFailed();
        }
        continue;
      }
      try {
        // Claim in whole batches, one ahead of the send slots: once the mails claimed ahead have all taken a
        // slot, claim the next batch while the slots are still busy, so that one durable claim commit serves
        // a full batch (a commit per mail would cap delivery at the disk's fsync rate) and no slot waits for it.
        // While outcomes wait for their commit, that commit claims the next batch in its own transaction
        // (outcome-commit.ts): the loop claims only when none is coming, so a steady worker commits once per batch.
        if (isClaiming || outcomes.unsettled > 0 || inFlight + ready.length > concurrency || unrecorded > maxUnrecorded - claimAhead / 2) {
          await sleep(pollIntervalMs);
          continue;
        }
        const claimed = await claimBatch();
        if (claimed === 0) {
          const nextDue = await repository.findNextDueAt(store.db);
          const untilDue = nextDue === undefined ? pollIntervalMs : Math.max(0, nextDue - clock.now());
          // untilDue 0: a mail fell due since the claim (or another instance's claim holds it a moment):
          // try again almost at once rather than after a whole poll interval.
          await sleep(untilDue > 0 ? Math.min(pollIntervalMs, untilDue) : 5);
        }
      } catch (error) {
        logger?.error({ err: error }, 'worker loop failed; retrying');
        markStoreAway();
      }
    }
  }

  return {
    workerId,
    wake,
    sweepExpiredLeases: leases.sweepExpiredLeases,
    /** Claims and delivers until stopped. */
    start(): void {
      if (isRunning) return;
      isRunning = true;
      loopDone = loop();
      leases.start();
    },
    /**
     * Graceful: stop claiming, let in-flight sends finish and write their outcomes. Sends still running
     * after `graceMs` (a relay that hangs) are given back to the queue at once instead of waiting for
     * their lease to expire; if one of them did reach the provider, it is sent again (at-least-once).
     */
    async stop({ graceMs = 10_000 }: { graceMs?: number } = {}): Promise<void> {
      isRunning = false;
      leases.stopSweeping();
      wake();
      await loopDone;
      await Promise.all(givingBack);
      // A claim riding on an outcome commit may still be under way: its mails join the ready ones first.
      while (isClaiming) await new Promise((resolve) => setTimeout(resolve, 5));
      // Mails claimed ahead and not sent yet: back to the queue now, for another instance or the next start.
      const unsent = ready.splice(0).map((r) => r.id);
      if (unsent.length > 0) {
        unrecorded -= unsent.length;
        // A store that is away keeps them until their leases expire and the sweeper requeues them.
        await leases
          .release(unsent, 'worker stopped before the send began')
          .catch((error: unknown) => logger?.error({ err: error, mailIds: unsent }, 'could not give claimed mails back at stop'));
      }
      const deadline = Date.now() + graceMs;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      await outcomes.flush();
      if (inFlight > 0) await leases.release('all', 'worker stopped while the send was in flight');
      await leases.stopRenewing();
      hasStopped = true;
      outcomes.stop();
    },
    get inFlight() {
      return inFlight;
    },
    get deliveredCount() {
      return deliveredCount;
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
