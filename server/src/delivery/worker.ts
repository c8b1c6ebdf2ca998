/**
 * The delivery worker's loop (docs/lifecycle.md): claims due Queued mails in batches under a lease, hands each
 * to the relay, and passes every outcome to the outcome group commit (outcome-commit.ts), which records it
 * with its attempt in the event log; what an outcome means is outcome-policy.ts. A crash before a commit
 * leaves those mails in Processing, and the lease sweeper (lease-sweeper.ts) returns them to Queued
 * (at-least-once). This file keeps the loop itself: wake and sleep, claiming with back-pressure, the
 * sweeper's timer, the pause while the store does not answer, and the graceful stop that gives unfinished
 * sends back to the queue.
 *
 * The pause: a send whose outcome cannot be written is sent again once its lease
 * expires. So when a write fails (an outcome commit or a claim), no new send starts until the store
 * answers again; the sends already in flight finish, and their outcomes are retried while their leases
 * hold. The loop probes the store with a growing delay (100 ms doubling to 2 s): with mails claimed ahead
 * the probe is giving them back to the queue (a write, so a store that reads but cannot write stays
 * paused), else `select 1`. A store outage thus sends twice at most the sends in flight when it began
 * (≤ concurrency), and none when it ends within the lease.
 */
import crypto from 'node:crypto';
import { LANE_CODES } from '@outbox/contract';
import os from 'node:os';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { applyTransitions } from '../mail/write/apply.js';
import { BULK_SHARE, renewLeases } from '../mail/write/claim.js';
import { probeStore, type Store } from '../store/connection.js';
import { releaseExpiredLeases } from './lease-sweeper.js';
import { createOutcomeCommit } from './outcome-commit.js';
import { sendOnePerRecipient } from './per-recipient-send.js';
import type { DeliveryOutcome, RecipientResult, RelayTransport } from './relay-transport.js';
import type { RelayRouter } from './relay-router.js';
import type { RelayTrail } from './routed-attempt.js';
import { suppressionCheckFor } from '../suppression/suppression-check.js';
import { suppressedAmong } from '../suppression/suppression.repository.js';
import type { RetryPolicy } from './retry-policy.js';
import { releasedTransition } from './lease-transitions.js';
import * as repository from './delivery.repository.js';
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

const MIN_PROBE_DELAY_MS = 100;
const MAX_PROBE_DELAY_MS = 2_000;

export function createDeliveryWorker(options: DeliveryWorkerOptions) {
  const { store, clock, transport, retryPolicy, logger } = options;
  const concurrency = options.concurrency ?? 20;
  const batchSize = options.batchSize ?? 50;
  const leaseMs = options.leaseMs ?? 60_000;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  // Every 5 s at most: with a process's heartbeat stale after 15 s, a crashed worker's mails move within 20 s.
  const sweepIntervalMs = options.sweepIntervalMs ?? Math.min(5_000, Math.max(100, leaseMs / 4));
  /** How often the leases of sends under way are looked at; those with less than half the lease left are renewed. */
  const renewIntervalMs = Math.max(50, leaseMs / 4);
  const workerId = options.workerId ?? `${os.hostname()}:${process.pid}:${crypto.randomBytes(3).toString('hex')}`;

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
  /** Bulk slots owed to the next claims: BULK_SHARE of each claim's limit, the fraction left carried over. */
  let bulkCredit = 0;
  /** A claim is under way (the loop's own, or one riding on an outcome commit): never two at once. */
  let isClaiming = false;
  /** A write to the store failed and it has not answered since: no send starts. */
  let isStoreAway = false;
  let probeDelayMs = MIN_PROBE_DELAY_MS;
  let loopDone: Promise<void> = Promise.resolve();
  let sweepTimer: NodeJS.Timeout | undefined;
  let renewTimer: NodeJS.Timeout | undefined;
  /**
   * Mails whose send is under way, by id, with the lease this worker holds on each. A send may outlast its lease
   * (a relay has ten minutes to answer the end of DATA): its lease is renewed meanwhile, so the sweeper never hands
   * it to another worker while this one still sends it.
   */
  const sending = new Map<number, repository.ClaimedMail>();
  const suppressions = suppressionCheckFor(store);
  /** The renewal under way, if any: an outcome waits for it, so it is recorded under the lease the store holds. */
  let renewing: Promise<void> | undefined;

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
      if (isStoreAway) wake();
    },
    claimAlong: {
      request() {
        if (!isRunning || isStoreAway || isClaiming) return undefined;
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
    // The bulk lane's share of slots (docs/lanes.md), carried from claim to claim: claims of a slot or two, a busy
    // worker's usual size, would each round the share down to none and starve bulk behind transactional mail.
    bulkCredit += limit * BULK_SHARE;
    const bulkMinimum = Math.floor(bulkCredit);
    bulkCredit -= bulkMinimum;
    return { now, limit, owner: workerId, leaseExpiresAt: now + leaseMs, bulkMinimum };
  }

  function takeClaimed(mails: repository.ClaimedMail[]): void {
    if (mails.length === 0) return;
    unrecorded += mails.length;
    options.onChange?.(mails.map((m) => m.id));
    // Transactional mail goes before the bulk mail claimed ahead of it (docs/lanes.md): a claim serves it first, and
    // the ready mails of earlier claims must not hold it back by a whole claim-ahead batch of bulk sends.
    const transactional = mails.filter((m) => m.lane === LANE_CODES.transactional);
    if (transactional.length === 0) ready.push(...mails);
    else {
      const firstBulk = ready.findIndex((m) => m.lane !== LANE_CODES.transactional);
      ready.splice(firstBulk === -1 ? ready.length : firstBulk, 0, ...transactional);
      ready.push(...mails.filter((m) => m.lane !== LANE_CODES.transactional));
    }
    fillSlots();
  }

  function markStoreAway(): void {
    if (isStoreAway) return;
    isStoreAway = true;
    probeDelayMs = MIN_PROBE_DELAY_MS;
    logger?.warn({ inFlight, claimedAhead: ready.length }, 'the store does not answer: no new sends until it does');
  }

  /**
   * One probe while the store is away. Mails claimed ahead are given back rather than sent: their leases
   * may be close to expiring, and the sweeper may already have handed them to another worker.
   */
  async function probeWhileAway(): Promise<void> {
    const unsent = ready.map((r) => r.id);
    if (unsent.length > 0) {
      await releaseLeases(unsent, 'the store did not answer before the send began');
      ready.splice(0, unsent.length);
      unrecorded -= unsent.length;
    } else {
      await probeStore(store.db);
    }
    isStoreAway = false;
    logger?.info({ inFlight }, 'the store answers again: sending resumes');
  }

  // A wake that comes while the loop is busy (claiming, say) makes the next sleep return at once.
  const { sleep, wake } = createWakeableSleep();

  async function deliver(mail: repository.ClaimedMail): Promise<void> {
    const { payload } = mail;
    let outcome: DeliveryOutcome;
    let trail: RelayTrail | undefined;
    if (!payload?.raw || payload.envelopeTo.length === 0) {
      outcome = {
        kind: 'invalid',
        reply: payload?.raw ? 'The mail has no recipients.' : 'No message content is stored for this mail.',
        durationMs: 0,
      };
    } else {
      const { returnPath } = options;
      const raw = payload.raw;
      sending.set(mail.id, mail);
      try {
        // An address suppressed since the mail was accepted (a complaint, a hard bounce, an operator) is not sent to.
        const suppressed = await suppressedTargets(payload.envelopeTo);
        const to = payload.envelopeTo.filter((address) => !suppressed.has(address));
        if (to.length === 0) {
          outcome = {
            kind: 'rejected',
            code: 550,
            reply: 'Not sent: every recipient left is on the suppression list.',
            recipients: [...suppressed.values()],
            durationMs: 0,
          };
        } else {
          // The first matching route's relays, with failover (relay-router.ts); no route in the store: the default relay,
          // through the router too (its health and throttling); no router: `transport` alone.
          const routed = await options.router?.route({
            apiKeyId: mail.api_key_id,
            lane: mail.lane,
            sender: payload.envelopeFrom,
            recipients: to,
          });
          const via = routed?.transport ?? transport;
          outcome = returnPath
            ? await sendOnePerRecipient(via, {
                raw,
                to,
                fromOf: (address) =>
                  returnPath(
                    mail.id,
                    payload.recipients.findIndex((r) => r.address === address),
                  ),
              })
            : await via.send({ envelope: { from: payload.envelopeFrom, to }, raw });
          trail = routed?.trail();
          if (suppressed.size > 0 && 'recipients' in outcome)
            outcome = { ...outcome, recipients: [...(outcome.recipients ?? []), ...suppressed.values()] };
        }
      } finally {
        sending.delete(mail.id);
      }
      // A renewal that took this mail in may still be under way: its outcome is conditional on the lease it ends with.
      if (renewing) await renewing;
    }
    if (hasStopped) return;
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
   * The targets on the suppression list now, each as its recipient's outcome. Asked only while the list may hold
   * anything (suppression-check.ts: an empty list is remembered for 5 s, and an add in this process is seen at once).
   */
  async function suppressedTargets(targets: string[]): Promise<Map<string, RecipientResult>> {
    const found = new Map<string, RecipientResult>();
    if (!(await suppressions.mayHaveAny())) return found;
    const rows = await suppressedAmong(store.db, targets, clock.now());
    for (const address of targets) {
      const row = rows.get(address.trim().toLowerCase());
      if (row)
        found.set(address, {
          address,
          outcome: 'suppressed',
          reply: `Not sent: on the suppression list since ${new Date(Number(row.created_at)).toISOString()} (${row.reason}).`,
        });
    }
    return found;
  }

  /**
   * Renews the leases of sends under way that have less than half the lease left. A lease the store no longer
   * holds for this worker (the sweeper released it while this process stalled) is not renewed: that send may be
   * repeated by another worker, the at-least-once case of docs/lifecycle.md.
   */
  async function renewRunningLeases(): Promise<void> {
    const now = clock.now();
    const due = [...sending.values()].filter((m) => m.lease_expires_at !== null && m.lease_expires_at - now < leaseMs / 2);
    if (due.length === 0) return;
    const expiresAt = now + leaseMs;
    const renewed = await renewLeases(
      store.db,
      workerId,
      due.map((m) => ({ id: m.id, heldUntil: m.lease_expires_at! })),
      expiresAt,
    );
    for (const mail of due) if (renewed.has(mail.id)) mail.lease_expires_at = expiresAt;
    const lost = due.filter((m) => !renewed.has(m.id)).map((m) => m.id);
    if (lost.length > 0) logger?.warn({ mailIds: lost }, 'a send outlasted its lease, which was released meanwhile: it may be sent again');
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
    while (isRunning && !isStoreAway && inFlight < concurrency && ready.length > 0) {
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
    const done: Promise<void> = releaseLeases(ids, 'the lease ran low before the send began')
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
      if (isStoreAway) {
        await sleep(probeDelayMs);
        if (!isRunning) break;
        try {
          await probeWhileAway();
        } catch {
          probeDelayMs = Math.min(MAX_PROBE_DELAY_MS, probeDelayMs * 2);
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

  async function sweepExpiredLeases(): Promise<number> {
    const now = clock.now();
    const released = await store.db.transaction().execute((trx) => releaseExpiredLeases(trx, now, retryPolicy, workerId));
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

  /**
   * At a stop, mails this worker holds go back to Queued at once instead of waiting for their lease to expire:
   * the given ids (claimed ahead, never sent), or every mail it still holds (sends still running).
   */
  async function releaseLeases(ids: number[] | 'all', reason: string): Promise<void> {
    const now = clock.now();
    const released = await store.db.transaction().execute(async (trx) => {
      const held = ids === 'all' ? await repository.listLeasesOf(trx, workerId) : ids;
      const { moved } = await applyTransitions(
        trx,
        held.map((id) => releasedTransition(id, now, workerId, reason)),
      );
      return moved.map((m) => m.id);
    });
    logger?.warn({ mailIds: released, reason }, 'stopped holding mails: returned them to the queue');
    if (released.length > 0) options.onChange?.(released);
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
      renewTimer = setInterval(() => {
        if (renewing || sending.size === 0) return;
        renewing = renewRunningLeases()
          .catch((error: unknown) => logger?.error({ err: error }, 'lease renewal failed'))
          .finally(() => {
            renewing = undefined;
          });
      }, renewIntervalMs);
      renewTimer.unref();
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
      await Promise.all(givingBack);
      // A claim riding on an outcome commit may still be under way: its mails join the ready ones first.
      while (isClaiming) await new Promise((resolve) => setTimeout(resolve, 5));
      // Mails claimed ahead and not sent yet: back to the queue now, for another instance or the next start.
      const unsent = ready.splice(0).map((r) => r.id);
      if (unsent.length > 0) {
        unrecorded -= unsent.length;
        // A store that is away keeps them until their leases expire and the sweeper requeues them.
        await releaseLeases(unsent, 'worker stopped before the send began').catch((error: unknown) =>
          logger?.error({ err: error, mailIds: unsent }, 'could not give claimed mails back at stop'),
        );
      }
      const deadline = Date.now() + graceMs;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      await outcomes.flush();
      if (inFlight > 0) await releaseLeases('all', 'worker stopped while the send was in flight');
      if (renewTimer) clearInterval(renewTimer);
      await renewing;
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
