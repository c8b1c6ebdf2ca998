import { describe, expect, it } from 'vitest';
import { createRetryPolicy } from '../../src/delivery/retry-policy.js';

const HOUR = 60 * 60 * 1000;
const receivedAt = Date.UTC(2026, 0, 1);

describe('createRetryPolicy', () => {
  it('doubles the delay from the base on each attempt without jitter', () => {
    const policy = createRetryPolicy({ jitter: 0, baseDelayMs: 30_000 });
    const delays = [1, 2, 3, 4].map((attempts) => {
      const decision = policy.decide({ attempts, receivedAt, now: receivedAt, outcome: 'deferred' });
      return decision.retry ? decision.nextAttemptAt - receivedAt : undefined;
    });
    expect(delays).toEqual([30_000, 60_000, 120_000, 240_000]);
  });

  it('caps the delay at maxDelayMs', () => {
    const policy = createRetryPolicy({ jitter: 0, maxAttempts: 20, maxDelayMs: HOUR, maxAgeMs: 48 * HOUR });
    const decision = policy.decide({ attempts: 15, receivedAt, now: receivedAt, outcome: 'unreachable' });
    expect(decision).toEqual({ retry: true, nextAttemptAt: receivedAt + HOUR });
  });

  it('applies jitter within ±jitter of the delay, and never beyond the cap', () => {
    const low = createRetryPolicy({ jitter: 0.2, random: () => 0 });
    const high = createRetryPolicy({ jitter: 0.2, random: () => 0.999999 });
    const input = { attempts: 1, receivedAt, now: receivedAt, outcome: 'deferred' as const };
    expect(low.decide(input)).toEqual({ retry: true, nextAttemptAt: receivedAt + 24_000 });
    expect(high.decide(input)).toEqual({ retry: true, nextAttemptAt: receivedAt + 36_000 });

    const capped = createRetryPolicy({ jitter: 0.2, random: () => 0.999999, maxAttempts: 20, maxAgeMs: 48 * HOUR });
    const decision = capped.decide({ ...input, attempts: 12 });
    expect(decision).toEqual({ retry: true, nextAttemptAt: receivedAt + HOUR });
  });

  it('stops once maxAttempts attempts were made', () => {
    const policy = createRetryPolicy({ maxAttempts: 3, jitter: 0 });
    expect(policy.decide({ attempts: 2, receivedAt, now: receivedAt, outcome: 'deferred' }).retry).toBe(true);
    expect(policy.decide({ attempts: 3, receivedAt, now: receivedAt, outcome: 'deferred' })).toEqual({ retry: false });
    expect(policy.decide({ attempts: 9, receivedAt, now: receivedAt, outcome: 'deferred' })).toEqual({ retry: false });
  });

  it('stops when the next attempt would fall after receivedAt + maxAgeMs', () => {
    const policy = createRetryPolicy({ jitter: 0, maxAgeMs: 10 * 60_000, baseDelayMs: 60_000 });
    const justInside = policy.decide({ attempts: 1, receivedAt, now: receivedAt + 9 * 60_000, outcome: 'deferred' });
    expect(justInside).toEqual({ retry: true, nextAttemptAt: receivedAt + 10 * 60_000 });
    const outside = policy.decide({ attempts: 1, receivedAt, now: receivedAt + 9 * 60_000 + 1, outcome: 'deferred' });
    expect(outside).toEqual({ retry: false });
  });

  it('uses the documented defaults: 8 attempts, 30 s base', () => {
    const policy = createRetryPolicy({ jitter: 0 });
    expect(policy.decide({ attempts: 1, receivedAt, now: receivedAt, outcome: 'deferred' })).toEqual({
      retry: true,
      nextAttemptAt: receivedAt + 30_000,
    });
    expect(policy.decide({ attempts: 8, receivedAt, now: receivedAt, outcome: 'deferred' })).toEqual({ retry: false });
  });

  it('refuses a configuration that could never work', () => {
    expect(() => createRetryPolicy({ maxAttempts: 0 })).toThrow(RangeError);
    expect(() => createRetryPolicy({ jitter: 1 })).toThrow(RangeError);
    expect(() => createRetryPolicy({ baseDelayMs: 10, maxDelayMs: 5 })).toThrow(RangeError);
  });
});
