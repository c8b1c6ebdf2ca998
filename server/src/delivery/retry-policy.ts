/**
 * When to try a transiently failed mail again (docs/lifecycle.md §3: Processing → Queued with backoff).
 * Pure: the caller passes `now` and, in tests, `random`, so no clock or sleep is involved.
 */

export type TransientOutcome = 'deferred' | 'unreachable';

export interface RetryPolicyOptions {
  /** Total attempts, the first one included, before the mail is given up. */
  maxAttempts?: number;
  /** A mail older than this (from its acceptance) is not retried, whatever its attempt count. */
  maxAgeMs?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Fraction of the delay added or removed at random, so retries of a burst do not hit the relay together. */
  jitter?: number;
  /** Returns a number in [0, 1); injected for deterministic tests. */
  random?: () => number;
}

export interface RetryInput {
  /** Attempts made so far, including the one that just failed. */
  attempts: number;
  /** Milliseconds since the epoch when the mail was accepted. */
  receivedAt: number;
  now: number;
  outcome: TransientOutcome;
}

/**
 * When a mail's retry budget starts to age: its receipt, or its scheduled send when it was scheduled (migration 026),
 * so a mail scheduled a week ahead is not given up at its first deferral.
 */
export function retryAgeFrom(mail: { received_at: number; send_at?: number | null | undefined }): number {
  return Math.max(mail.received_at, mail.send_at ?? 0);
}

export type RetryDecision = { retry: true; nextAttemptAt: number } | { retry: false };

export interface RetryPolicy {
  decide(input: RetryInput): RetryDecision;
}

const HOUR_MS = 60 * 60 * 1000;

export function createRetryPolicy(options: RetryPolicyOptions = {}): RetryPolicy {
  const {
    maxAttempts = 8,
    maxAgeMs = 24 * HOUR_MS,
    baseDelayMs = 30_000,
    maxDelayMs = HOUR_MS,
    jitter = 0.2,
    random = Math.random,
  } = options;

  // A misconfigured policy would silently retry forever or never; fail at construction instead.
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError('maxAttempts must be an integer ≥ 1');
  if (!(maxAgeMs > 0)) throw new RangeError('maxAgeMs must be > 0');
  if (!(baseDelayMs > 0)) throw new RangeError('baseDelayMs must be > 0');
  if (!(maxDelayMs >= baseDelayMs)) throw new RangeError('maxDelayMs must be ≥ baseDelayMs');
  if (!(jitter >= 0 && jitter < 1)) throw new RangeError('jitter must be in [0, 1)');

  return {
    // `outcome` is accepted so that a later policy can treat an unreachable relay differently
    // from a deferring one without changing callers; today both back off the same way.
    decide({ attempts, receivedAt, now }: RetryInput): RetryDecision {
      if (attempts >= maxAttempts) return { retry: false };
      // Math.min before the power would still overflow for absurd attempt counts; cap the exponent.
      const exponent = Math.min(Math.max(attempts - 1, 0), 52);
      const capped = Math.min(baseDelayMs * 2 ** exponent, maxDelayMs);
      const factor = 1 + jitter * (2 * random() - 1);
      // Jitter never pushes past maxDelayMs, so the cap stays a promise to operators.
      const delay = Math.max(0, Math.min(Math.round(capped * factor), maxDelayMs));
      const nextAttemptAt = now + delay;
      if (nextAttemptAt > receivedAt + maxAgeMs) return { retry: false };
      return { retry: true, nextAttemptAt };
    },
  };
}

/**
 * The policy the RETRY_* variables set (config/worker-settings.ts), as every worker process builds it: delays
 * double up to an hour, or up to the base delay when that is longer.
 */
export function retryPolicyFromSettings(settings: {
  retryMaxAttempts: number;
  retryMaxAgeMs: number;
  retryBaseDelayMs: number;
}): RetryPolicy {
  return createRetryPolicy({
    maxAttempts: settings.retryMaxAttempts,
    maxAgeMs: settings.retryMaxAgeMs,
    baseDelayMs: settings.retryBaseDelayMs,
    maxDelayMs: Math.max(HOUR_MS, settings.retryBaseDelayMs),
  });
}
