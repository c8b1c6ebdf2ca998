/**
 * The dispatcher's writes, through the group commit that submissions, the delivery worker and bounce reports
 * use (store/group-commit.ts). Two kinds of item share a group:
 * - an attempt's outcome, which nothing waits for: the request was made, so a group waits up to `flushDelayMs`
 *   for more (it adds nothing to an event's lag and bounds how many attempts a crash leaves unrecorded, each
 *   made again), or until 1,000 wait. A failed commit logs and submits its outcomes again; they keep the order
 *   their answers came in, which the failing streaks read.
 * - a fan-out, which the loop waits for: it is committed at once and takes the waiting outcomes into its
 *   transaction. On SQLite each commit is an fsync on the thread the worker shares, and two per round made the
 *   worker lose most of its rate.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/connection.js';
import { createGroupCommit } from '../store/group-commit.js';
import { createWakeableSleep } from '../wakeable-sleep.js';
import { applyDisablePolicy, describeDisable, type DisabledEndpoint } from './endpoint-disable.js';
import { fanOutEvents, type FanOutResult } from './fan-out.js';
import * as repo from './webhook-dispatch.repository.js';

/** Outcomes that commit at once instead of waiting `flushDelayMs`, and the most one commit takes. */
const MAX_OUTCOMES_PER_COMMIT = 1000;

type Item =
  | { kind: 'outcome'; outcome: repo.AttemptOutcome; gone: boolean; order: number }
  | { kind: 'fan-out'; owner: string; leaseMs: number; batch: number };

export interface WebhookCommitOptions {
  store: Store;
  clock: Clock;
  logger?: Logger | undefined;
  flushDelayMs: number;
  /** Endpoints a commit disabled: the dispatcher stops sending to them. */
  onDisabled(disabled: DisabledEndpoint[]): void;
}

export interface WebhookCommit {
  /** Records an attempt's outcome in a coming commit; `gone`: its endpoint answered 410. */
  record(outcome: repo.AttemptOutcome, gone: boolean): void;
  /** Fans out up to `batch` events, leased to `owner` for `leaseMs`, in a commit made at once. */
  fanOut(request: { owner: string; leaseMs: number; batch: number }): Promise<FanOutResult>;
  /** Commits what waits at once, and from now on without waiting; resolves when nothing waits (a stop). */
  finish(): Promise<void>;
}

export function createWebhookCommit(options: WebhookCommitOptions): WebhookCommit {
  const { store, clock, logger } = options;
  let order = 0;
  let fanOutsWaiting = 0;
  let finishing = false;
  const gatherSleep = createWakeableSleep();
  const commits = createGroupCommit<Item, FanOutResult | undefined>({
    maxGroupWeight: MAX_OUTCOMES_PER_COMMIT,
    splitOnFailure: false,
    async gather({ oldestWaitMs }) {
      const until = performance.now() + options.flushDelayMs - oldestWaitMs;
      while (fanOutsWaiting === 0 && commits.queued < MAX_OUTCOMES_PER_COMMIT && !finishing) {
        const left = until - performance.now();
        if (left <= 0) return;
        await gatherSleep.sleep(left);
      }
    },
    commit: commitGroup,
  });

  async function commitGroup(items: Item[]): Promise<Array<FanOutResult | undefined>> {
    const outcomes = items.flatMap((item) => (item.kind === 'outcome' ? [item] : [])).sort((a, b) => a.order - b.order);
    const fanOuts = items.flatMap((item) => (item.kind === 'fan-out' ? [item] : []));
    fanOutsWaiting -= fanOuts.length;
    const now = clock.now();
    const goneIds = [...new Set(outcomes.filter((item) => item.gone).map((item) => item.outcome.endpointId))];
    let disabled: DisabledEndpoint[] = [];
    let fannedOut: Map<Item, FanOutResult>;
    try {
      fannedOut = await store.db.transaction().execute(async (trx) => {
        if (outcomes.length > 0) {
          const written = outcomes.map((item) => item.outcome);
          await repo.recordAttempts(trx, written);
          disabled = await applyDisablePolicy(trx, written, goneIds, now);
        }
        const results = new Map<Item, FanOutResult>();
        for (const item of fanOuts)
          results.set(
            item,
            await fanOutEvents(trx, store.engine, { now, owner: item.owner, leaseUntil: now + item.leaseMs, batch: item.batch }),
          );
        return results;
      });
    } catch (error) {
      if (outcomes.length > 0) logger?.error({ err: error }, 'recording webhook attempts failed; retrying');
      throw error;
    }
    for (const change of disabled) logger?.warn({ endpointId: change.id, reason: change.reason }, describeDisable(change.reason));
    if (disabled.length > 0) options.onDisabled(disabled);
    return items.map((item) => fannedOut.get(item));
  }

  function submitOutcome(item: Item): void {
    // A failed commit has logged; its outcomes go again with the next group, unless the dispatcher is
    // stopping (then, as for a crash, their attempts are made again after the leases run out).
    commits.submit(item).catch(() => {
      if (!finishing) submitOutcome(item);
    });
    if (commits.queued >= MAX_OUTCOMES_PER_COMMIT) gatherSleep.wake();
  }

  return {
    record(outcome, gone) {
      submitOutcome({ kind: 'outcome', outcome, gone, order: order++ });
    },
    async fanOut(request) {
      fanOutsWaiting += 1;
      gatherSleep.wake();
      return (await commits.submit({ kind: 'fan-out', ...request }))!;
    },
    async finish() {
      finishing = true;
      gatherSleep.wake();
      await commits.idle();
    },
  };
}
