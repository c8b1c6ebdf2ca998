/**
 * The worker's pause while the store does not answer. A send whose outcome cannot be written is sent again once its
 * lease expires. So when a write fails (an outcome commit or a claim), no new send starts until the store answers
 * again; the sends already in flight finish, and their outcomes are retried while their leases hold. The loop probes
 * the store with a growing delay (100 ms doubling to 2 s): with mails claimed ahead the probe is giving them back to
 * the queue (a write, so a store that reads but cannot write stays paused), else `select 1`. A store outage thus
 * sends twice at most the sends in flight when it began (≤ concurrency), and none when it ends within the lease.
 */
import type { Logger } from '../logger.js';

const MIN_PROBE_DELAY_MS = 100;
const MAX_PROBE_DELAY_MS = 2_000;

export function createStoreOutage(logger: Logger | undefined) {
  /** A write to the store failed and it has not answered since: no send starts. */
  let isAway = false;
  let probeDelayMs = MIN_PROBE_DELAY_MS;
  return {
    get isAway(): boolean {
      return isAway;
    },
    /** How long the loop waits before its next probe. */
    get probeDelayMs(): number {
      return probeDelayMs;
    },
    /** A write failed: `sending` says what is in flight and claimed ahead, for the log. */
    markAway(sending: { inFlight: number; claimedAhead: number }): void {
      if (isAway) return;
      isAway = true;
      probeDelayMs = MIN_PROBE_DELAY_MS;
      logger?.warn(sending, 'the store does not answer: no new sends until it does');
    },
    probeFailed(): void {
      probeDelayMs = Math.min(MAX_PROBE_DELAY_MS, probeDelayMs * 2);
    },
    markBack(inFlight: number): void {
      isAway = false;
      logger?.info({ inFlight }, 'the store answers again: sending resumes');
    },
  };
}
