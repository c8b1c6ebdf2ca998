/**
 * The pacing of one relay's sends in this process (`maxPerSecond`, lowered while a throttle holds): each worker process
 * has its own, so N processes may send N times the rate. Real time, not the worker's clock: pacing is about the
 * network.
 */
import { performance } from 'node:perf_hooks';

export interface Pacer {
  /** Messages per second now; null: unpaced. */
  readonly perSecond: number | null;
  /** Resolves when the next message may go: in the order asked, spaced at least 1/rate apart. */
  take(): Promise<void>;
  /** A new rate for the waiting messages too: a throttle slows those already queued, a recovery speeds them up. */
  setRate(perSecond: number | null): void;
  /** Lets every waiting message go at once (the router is closing; they are not sent). */
  releaseAll(): void;
}

/**
 * Paces sends at most `perSecond` a second (null: unpaced), one at a time (a bucket of one token): N sends take
 * ≥ (N−1)/rate. Waiters queue, and the spacing is computed when each reaches the head, so a rate changed while they
 * wait applies to them.
 */
export function createPacer(perSecond: number | null): Pacer {
  let rate = perSecond;
  /** The instant the last message was let go at, as scheduled (not as the timer fired). */
  let lastAt = Number.NEGATIVE_INFINITY;
  const waiting: Array<() => void> = [];
  let timer: NodeJS.Timeout | undefined;
  const interval = () => (rate === null ? 0 : 1000 / rate);
  /** Takes the slot due at `due` now: spaced by scheduled instants, so late timers do not slow the rate down, and a
   * pause longer than one interval lets the next message go at once without a burst to catch up. */
  const takeSlot = (now: number, due: number) => {
    lastAt = now - due < interval() ? due : now;
  };

  function releaseDue(): void {
    timer = undefined;
    while (waiting.length > 0) {
      const now = performance.now();
      const due = lastAt + interval();
      // Timers round to whole milliseconds and may fire a little early: wait until the instant has truly passed.
      if (now < due) {
        timer = setTimeout(releaseDue, Math.max(1, Math.ceil(due - now)));
        return;
      }
      takeSlot(now, due);
      waiting.shift()!();
    }
  }

  return {
    get perSecond() {
      return rate;
    },
    take() {
      if (waiting.length === 0) {
        const now = performance.now();
        const due = lastAt + interval();
        if (now >= due) {
          takeSlot(now, due);
          return Promise.resolve();
        }
      }
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (!timer) releaseDue();
      });
    },
    setRate(next) {
      if (next === rate) return;
      rate = next;
      if (timer) clearTimeout(timer);
      releaseDue();
    },
    releaseAll() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      for (const resolve of waiting.splice(0)) resolve();
    },
  };
}
