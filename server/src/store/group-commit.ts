/**
 * Group commit: items that arrive while a commit is running wait for the next one, which takes every item
 * that arrived meanwhile (up to a weight), so that many items share one durable commit (fsync dominates
 * both intake and delivery) while an idle server still commits at once. Used by submissions (each request
 * waits for its mails), the delivery worker (outcomes of sends), bounce reports and the webhook dispatcher
 * (outcomes of attempts, and its fan-outs).
 */

export interface GatherState {
  /** Items waiting now, the current group's not yet taken. */
  queued: number;
  /** Since the previous commit ended (Infinity before the first). */
  msSinceLastCommit: number;
  /** How long the oldest waiting item has waited. */
  oldestWaitMs: number;
}

export interface GroupCommitOptions<T, R> {
  /** Commits a group in one transaction; one result per item, in order. */
  commit(items: T[]): Promise<R[]>;
  /** Waits before a group is taken, so that items on their way can join it. */
  gather(state: GatherState): Promise<void>;
  /** A group takes items while their weight stays within this (always at least one item). */
  maxGroupWeight: number;
  weightOf?: (item: T) => number;
  /**
   * When a group of several fails: commit each item alone, so that only the one that spoiled it fails
   * (an idempotency race), or fail them all (a store outage, which the caller retries as a whole).
   */
  splitOnFailure: boolean;
  /**
   * Groups that may be committing at once (1 by default). More only where each commit runs on a connection
   * of its own (PostgreSQL's pool): a group gathered while another executes is sent at once, so the server's
   * thread and the database work at the same time instead of by turns.
   */
  maxConcurrentCommits?: number;
}

export interface GroupCommit<T, R> {
  submit(item: T): Promise<R>;
  /** Items waiting for a commit. */
  readonly queued: number;
  /** Resolves once nothing waits and no commit runs. */
  idle(): Promise<void>;
}

export function createGroupCommit<T, R>(options: GroupCommitOptions<T, R>): GroupCommit<T, R> {
  const weightOf = options.weightOf ?? (() => 1);
  const waiting: Array<{ item: T; since: number; resolve: (result: R) => void; reject: (error: unknown) => void }> = [];
  const maxConcurrent = Math.max(1, options.maxConcurrentCommits ?? 1);
  /**
   * Drains running, and those of them gathering (not yet holding a group): both counted synchronously with
   * the check of `waiting`, so no item is left behind a finishing drain.
   */
  let running = 0;
  let gathering = 0;
  const drains = new Set<Promise<void>>();
  let lastCommitEnd = -Infinity;

  async function commitAlone(entry: (typeof waiting)[number]): Promise<void> {
    try {
      entry.resolve((await options.commit([entry.item]))[0]!);
    } catch (error) {
      entry.reject(error);
    }
  }

  async function drain(): Promise<void> {
    for (;;) {
      if (waiting.length === 0) {
        running -= 1;
        gathering -= 1;
        return;
      }
      const now = performance.now();
      await options.gather({ queued: waiting.length, msSinceLastCommit: now - lastCommitEnd, oldestWaitMs: now - waiting[0]!.since });
      // Another drain gathering at the same time may have taken everything.
      if (waiting.length === 0) continue;
      let weight = 0;
      let take = 0;
      while (take < waiting.length && (take === 0 || weight + weightOf(waiting[take]!.item) <= options.maxGroupWeight)) {
        weight += weightOf(waiting[take]!.item);
        take += 1;
      }
      const group = waiting.splice(0, take);
      gathering -= 1;
      // Items that came after this group (or were left by its weight) get a drain of their own if one may run.
      startDrainIfNeeded();
      try {
        const results = await options.commit(group.map((g) => g.item));
        lastCommitEnd = performance.now();
        group.forEach((g, i) => g.resolve(results[i]!));
      } catch (error) {
        lastCommitEnd = performance.now();
        if (group.length > 1 && options.splitOnFailure) {
          for (const entry of group) await commitAlone(entry);
        } else {
          for (const entry of group) entry.reject(error);
        }
      }
      gathering += 1;
    }
  }

  /** A new drain when items wait, none is gathering, and fewer than the allowed run. */
  function startDrainIfNeeded(): void {
    if (waiting.length === 0 || gathering > 0 || running >= maxConcurrent) return;
    running += 1;
    gathering += 1;
    const drained = drain();
    drains.add(drained);
    void drained.finally(() => drains.delete(drained));
  }

  return {
    submit(item: T): Promise<R> {
      return new Promise<R>((resolve, reject) => {
        waiting.push({ item, since: performance.now(), resolve, reject });
        startDrainIfNeeded();
      });
    },
    get queued() {
      return waiting.length;
    },
    async idle(): Promise<void> {
      while (drains.size > 0) await Promise.all(drains);
    },
  };
}
