/**
 * Records delivery outcomes in groups (group-commit.ts): one transaction per group, at the latest
 * `flushDelayMs` after the first outcome or as soon as `batchSize` wait, so that a durable commit is not
 * paid once per mail. Each outcome becomes its transition and recipient outcomes (outcome-policy.ts); the
 * whole group is one UPDATE of recipients and one `applyTransitions`, i.e. one conditional UPDATE of mails,
 * one INSERT of events and one counter move. The same transaction claims the worker's next batch when it
 * wants one (`claimAlong`), so a steady worker commits once per batch, not twice.
 *
 * A failed commit (a deadlock, a lost connection, a store restarting) is tried again with a growing delay
 * (50 ms doubling to 1 s), at least five times and then for as long as the mail's lease holds: the commit
 * is conditional on the lease, so an outcome written late is still right, and every outcome written is a
 * send the sweeper will not hand out again. Once the lease has expired the outcome is given up; the mail
 * stays in Processing until the sweeper requeues it: sent again, never lost. The worker hears of each
 * failure and success (`onCommitFailed`, `onCommitted`) to stop starting sends while the store is away.
 */
import type { Logger } from '../logger.js';
import type { Store } from '../store/connection.js';
import { createGroupCommit } from '../store/group-commit.js';
import { applyTransitions } from '../mail/write/apply.js';
import { moveStatusCounts } from '../mail/write/counters.js';
import { createStatisticsMoves } from '../statistics/statistics-moves.js';
import { writeStatistics } from '../statistics/statistics.repository.js';
import { type StatusCountMoves } from '../mail/transition-types.js';
import { decideAttempt, type AttemptDecision, type AttemptResult } from './outcome-policy.js';
import type { EventRecipient } from '../events/application-event-data.js';
import { claimDueMails, recordRecipientOutcomes, type ClaimedMail, type ClaimRequest } from './delivery.repository.js';
import type { RetryPolicy } from './retry-policy.js';
import { suppressionCheckFor } from '../suppression/suppression-check.js';
import { upsertSuppressions, type NewSuppression } from '../suppression/suppression.repository.js';

/**
 * A refusal saying the address does not exist (RFC 3463: 5.1.1 bad mailbox, 5.1.2 bad domain, 5.1.10 null MX)
 * puts it on the suppression list with the mail and the reply; any other refusal does not.
 */
const NO_SUCH_ADDRESS = /(?:^|[\s(])5\.1\.(?:1|2|10)(?![.\d])/;

export interface OutcomeCommitOptions {
  store: Store;
  retryPolicy: RetryPolicy;
  workerId: string;
  batchSize: number;
  flushDelayMs: number;
  logger?: Logger | undefined;
  /** An outcome is settled: recorded, refused because the lease was lost, or given up after the retries. */
  onSettled(): void;
  /** Mails whose status this group changed. */
  onChange?: ((ids: number[]) => void) | undefined;
  /** A group's commit failed: the store may be away. */
  onCommitFailed?: (() => void) | undefined;
  /** A group's commit succeeded: the store answers. */
  onCommitted?: (() => void) | undefined;
  /** The clock leases are written in; Date.now by default. */
  now?: (() => number) | undefined;
  /**
   * The next batch claimed in the same transaction as a group of outcomes: `request` is asked as
   * the group commits (undefined: claim nothing now); `claimed` gets the mails once the commit succeeded, or
   * an empty list when it failed (the claim was rolled back with the outcomes).
   */
  claimAlong?: { request(): ClaimRequest | undefined; claimed(mails: ClaimedMail[]): void } | undefined;
  /** False: no application events are written (bench/events.ts measures what they cost); true by default. */
  applicationEvents?: boolean | undefined;
}

/**
 * A mail's envelope recipients as this commit leaves them, when its attempt writes every one of them (a first
 * attempt always does): its application event then needs no read of them (one round trip per flush less on
 * PostgreSQL). Undefined otherwise: a recipient the attempt did not touch may have changed since the claim
 * (a bounce report), so applyTransitions reads them in the transaction. The rows this commit writes stay
 * locked until it ends, so what it wrote is what they hold.
 */
function recipientsAfter(result: AttemptResult, decision: AttemptDecision): EventRecipient[] | undefined {
  if (!result.recipients) return undefined;
  const written = new Map(decision.recipients.map((update) => [update.address, update]));
  const after: EventRecipient[] = [];
  for (const { address } of result.recipients.all) {
    const update = written.get(address);
    if (!update) return undefined;
    after.push({ address, outcome: update.outcome, reply: update.reply });
  }
  return after;
}

/** Retries tried whatever the lease; past them, only while the lease holds. */
const MIN_RETRIES = 5;
const MAX_RETRY_DELAY_MS = 1_000;

interface PendingResult extends AttemptResult {
  /** How many commits of this result failed already. */
  retries: number;
}

export function createOutcomeCommit(options: OutcomeCommitOptions) {
  const { store, retryPolicy, workerId, batchSize, flushDelayMs, logger } = options;
  const now = options.now ?? Date.now;
  let isStopped = false;
  let isUrgent = false;
  /** Ends the current gathering wait early (the group is full, or the worker stops). */
  let gathered: (() => void) | undefined;

  const group = createGroupCommit<PendingResult, boolean>({
    maxGroupWeight: batchSize,
    // A failure here is the store's, not one outcome's: retry the group as a whole.
    splitOnFailure: false,
    gather({ queued, oldestWaitMs }) {
      const wait = flushDelayMs - oldestWaitMs;
      if (isUrgent || queued >= batchSize || wait <= 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait);
        function done() {
          clearTimeout(timer);
          gathered = undefined;
          resolve();
        }
        gathered = done;
      });
    },
    async commit(results) {
      const decisions = results.map((result) => decideAttempt(result, retryPolicy, workerId));
      const recipientUpdates = decisions.flatMap((d, i) =>
        d.recipients.map((u) => ({ ...u, leaseExpiresAt: results[i]!.mail.lease_expires_at })),
      );
      // Only the relay's own answer to RCPT names the address; a refusal of the whole message after DATA does not
      // say which of its recipients is unknown.
      const suppressions: NewSuppression[] = results.flatMap((result) =>
        ('recipients' in result.outcome ? (result.outcome.recipients ?? []) : [])
          .filter((r) => r.outcome === 'rejected' && NO_SUCH_ADDRESS.test(r.reply))
          .map((r) => ({
            address: r.address,
            reason: 'rcpt_refused' as const,
            mailId: result.mail.id,
            detail: r.reply,
            createdBy: `worker:${workerId}`,
            at: result.at,
          })),
      );
      const eventRecipients = new Map<number, EventRecipient[]>();
      decisions.forEach((decision, i) => {
        const after = recipientsAfter(results[i]!, decision);
        if (after) eventRecipients.set(results[i]!.mail.id, after);
      });
      const claim = options.claimAlong?.request();
      let claimed: ClaimedMail[] = [];
      try {
        const { moved } = await store.db.transaction().execute(async (trx) => {
          // Recipients first (conditional on the same lease as the status change), the counters last.
          await recordRecipientOutcomes(trx, store.engine, recipientUpdates, workerId, Math.max(...results.map((r) => r.at)));
          // What the relay said about the address is true whoever holds the lease: kept in the same commit.
          if (suppressions.length > 0) await upsertSuppressions(trx, suppressions);
          // One transaction records the outcomes and claims the next batch: one durable commit and fewer round
          // trips per batch than a claim of its own. The counters of both move once, last, in status order.
          // The statistics after them (statistics.repository.ts: the same lock order for every writer).
          const counts: StatusCountMoves = new Map();
          const statistics = createStatisticsMoves();
          const applied = await applyTransitions(
            trx,
            decisions.map((d) => d.transition),
            { counts, statistics, eventRecipients, ...(options.applicationEvents === false ? { applicationEvents: false } : {}) },
          );
          if (claim) claimed = await claimDueMails(trx, store.engine, claim);
          await moveStatusCounts(trx, counts);
          await writeStatistics(trx, statistics);
          return applied;
        });
        if (claim) options.claimAlong?.claimed(claimed);
        options.onCommitted?.();
        if (suppressions.length > 0) suppressionCheckFor(store).added();
        if (moved.length > 0) options.onChange?.(moved.map((m) => m.id));
        const movedIds = new Set(moved.map((m) => m.id));
        return results.map((result) => movedIds.has(result.mail.id));
      } catch (error) {
        if (claim) options.claimAlong?.claimed([]);
        options.onCommitFailed?.();
        logger?.error(
          { err: error, mailIds: results.map((r) => r.mail.id), retries: results[0]!.retries },
          'could not record delivery outcomes',
        );
        throw error;
      }
    },
  });

  /** Outcomes recorded and not settled yet (waiting, committing, or waiting to retry). */
  let unsettled = 0;
  function settle(): void {
    unsettled -= 1;
    options.onSettled();
  }

  function submit(result: PendingResult): void {
    group.submit(result).then(
      () => settle(),
      () => {
        const leaseHolds = result.mail.lease_expires_at !== null && now() < result.mail.lease_expires_at;
        if (isStopped || (result.retries >= MIN_RETRIES && !leaseHolds)) {
          if (!isStopped) {
            logger?.error(
              { mailId: result.mail.id, retries: result.retries },
              'gave up recording a delivery outcome: the lease expired; the sweeper requeues the mail and it is sent again',
            );
          }
          settle();
          return;
        }
        setTimeout(
          () => {
            if (isStopped) settle();
            else submit({ ...result, retries: result.retries + 1 });
          },
          Math.min(MAX_RETRY_DELAY_MS, 50 * 2 ** result.retries),
        ).unref();
      },
    );
    if (group.queued >= batchSize) gathered?.();
  }

  return {
    /** Queues an outcome; it is settled through `onSettled`. */
    record(result: AttemptResult): void {
      if (isStopped) return;
      unsettled += 1;
      submit({ ...result, retries: 0 });
    },
    /** Outcomes recorded and not settled yet: their commit will come, and can carry the next claim. */
    get unsettled(): number {
      return unsettled;
    },
    /** Commits what waits now, without the gathering delay, and resolves when nothing waits. */
    async flush(): Promise<void> {
      isUrgent = true;
      gathered?.();
      await group.idle();
      isUrgent = false;
    },
    /** No more commits: a send that finishes later must not touch the (maybe closed) store. */
    stop(): void {
      isStopped = true;
    },
  };
}

export type OutcomeCommit = ReturnType<typeof createOutcomeCommit>;
