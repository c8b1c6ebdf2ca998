/**
 * Records delivery outcomes in groups (group-commit.ts): one transaction per group, at the latest
 * `flushDelayMs` after the first outcome or as soon as `batchSize` wait, so that a durable commit is not
 * paid once per mail. Each outcome becomes its transition and recipient outcomes (outcome-policy.ts); the
 * whole group is one UPDATE of recipients and one `applyTransitions`, i.e. one conditional UPDATE of mails,
 * one INSERT of events and one counter move.
 *
 * A failed commit (a deadlock, a lost connection) is tried again shortly, up to five times; past that the
 * mails stay in Processing under the lease and the sweeper requeues them: sent again, never lost.
 */
import type { Store } from '../store/connection.js';
import { createGroupCommit } from '../mail/group-commit.js';
import { applyTransitions } from '../mail/transition.repository.js';
import { decideAttempt, type AttemptResult } from './outcome-policy.js';
import { recordRecipientOutcomes } from './queue.repository.js';
import type { RetryPolicy } from './retry-policy.js';

export interface WorkerLogger {
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

export interface OutcomeCommitOptions {
  store: Store;
  retryPolicy: RetryPolicy;
  workerId: string;
  batchSize: number;
  flushDelayMs: number;
  logger?: WorkerLogger | undefined;
  /** An outcome is settled: recorded, refused because the lease was lost, or given up after the retries. */
  onSettled(): void;
  /** Mails whose status this group changed. */
  onChange?: ((ids: number[]) => void) | undefined;
}

const MAX_RETRIES = 5;

interface PendingResult extends AttemptResult {
  /** How many commits of this result failed already. */
  retries: number;
}

export function createOutcomeCommit(options: OutcomeCommitOptions) {
  const { store, retryPolicy, workerId, batchSize, flushDelayMs, logger } = options;
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
      try {
        const { moved } = await store.db.transaction().execute(async (trx) => {
          // Recipients first (conditional on the same lease as the status change), the counters last.
          await recordRecipientOutcomes(trx, recipientUpdates, workerId, Math.max(...results.map((r) => r.at)));
          return applyTransitions(
            trx,
            decisions.map((d) => d.transition),
          );
        });
        if (moved.length > 0) options.onChange?.(moved.map((m) => m.id));
        const movedIds = new Set(moved.map((m) => m.id));
        return results.map((result) => movedIds.has(result.mail.id));
      } catch (error) {
        logger?.error(
          { err: error, mailIds: results.map((r) => r.mail.id), retries: results[0]!.retries },
          'could not record delivery outcomes',
        );
        throw error;
      }
    },
  });

  function submit(result: PendingResult): void {
    group.submit(result).then(
      () => options.onSettled(),
      () => {
        if (result.retries >= MAX_RETRIES || isStopped) {
          options.onSettled();
          return;
        }
        setTimeout(
          () => {
            if (isStopped) options.onSettled();
            else submit({ ...result, retries: result.retries + 1 });
          },
          50 * (result.retries + 1),
        ).unref();
      },
    );
    if (group.queued >= batchSize) gathered?.();
  }

  return {
    /** Queues an outcome; it is settled through `onSettled`. */
    record(result: AttemptResult): void {
      if (!isStopped) submit({ ...result, retries: 0 });
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
