/**
 * The signature against the Standard Webhooks test vector (the standard-webhooks repository's
 * JavaScript library, its test "sign function works") and the `standardwebhooks` package's own
 * `sign` on generated ids, timestamps and bodies; the
 * retry verdicts and Retry-After, without a network or a clock.
 */
import crypto from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_SCHEDULE_MS,
  judgeAttempt,
  newWebhookSecret,
  parseRetryAfter,
  RETRY_AFTER_CAP_MS,
  signatureHeader,
  webhookBody,
} from '../../src/webhooks/webhook-policy.js';

describe('signature', () => {
  it("matches the specification's test vector", () => {
    const header = signatureHeader(
      ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    expect(header).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('is what the standardwebhooks package signs, for any id, timestamp and body (unicode included)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 24, maxLength: 32 }),
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 4_000_000_000 }),
        fc.string({ unit: 'grapheme', maxLength: 300 }),
        (bytes, id, timestamp, body) => {
          const secret = `whsec_${Buffer.from(bytes).toString('base64')}`;
          expect(signatureHeader([secret], id, timestamp, body)).toBe(new Webhook(secret).sign(id, new Date(timestamp * 1000), body));
        },
      ),
      { numRuns: 300, seed: 20261126 },
    );
  });

  it('is base64 HMAC-SHA256 of id.timestamp.body with the secret decoded from base64, one per secret', () => {
    const [a, b] = [newWebhookSecret(), newWebhookSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = webhookBody({
      type: 'mail.sent',
      created_at: Date.parse('2026-11-26T10:00:00Z'),
      payload: '{"mail":{"id":7,"subject":"Grüße"}}',
    });
    expect(JSON.parse(body)).toEqual({
      type: 'mail.sent',
      timestamp: '2026-11-26T10:00:00.000Z',
      data: { mail: { id: 7, subject: 'Grüße' } },
    });
    const hmac = (secret: string) =>
      crypto
        .createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
        .update(`evt_1.1700000000.${body}`)
        .digest('base64');
    expect(signatureHeader([a, b], 'evt_1', 1700000000, body)).toBe(`v1,${hmac(a)} v1,${hmac(b)}`);
  });
});

describe('judgeAttempt', () => {
  const options = { schedule: DEFAULT_RETRY_SCHEDULE_MS, now: 0, random: () => 0.5 };
  it('2xx succeeds, 410 is gone, anything else retries on the schedule and fails when it is spent', () => {
    expect(judgeAttempt({ httpStatus: 204, error: null }, 1, options)).toEqual({ kind: 'succeeded' });
    expect(judgeAttempt({ httpStatus: 410, error: null }, 1, options)).toEqual({ kind: 'gone' });
    expect(judgeAttempt({ httpStatus: 500, error: null }, 1, options)).toEqual({ kind: 'retry', delayMs: 5_000 });
    expect(judgeAttempt({ httpStatus: 301, error: null }, 2, options)).toEqual({ kind: 'retry', delayMs: 300_000 });
    expect(judgeAttempt({ httpStatus: null, error: 'connection refused' }, 7, options)).toEqual({ kind: 'retry', delayMs: 36_000_000 });
    expect(judgeAttempt({ httpStatus: null, error: 'timeout' }, 8, options)).toEqual({ kind: 'failed' });
  });
  it('jitters by at most 10 %', () => {
    expect(judgeAttempt({ httpStatus: 500, error: null }, 1, { ...options, random: () => 0 })).toEqual({ kind: 'retry', delayMs: 4_500 });
    expect(judgeAttempt({ httpStatus: 500, error: null }, 1, { ...options, random: () => 1 })).toEqual({ kind: 'retry', delayMs: 5_500 });
  });
  it('waits for Retry-After when it is longer than the schedule', () => {
    expect(judgeAttempt({ httpStatus: 429, retryAfter: '120', error: null }, 1, options)).toEqual({ kind: 'retry', delayMs: 120_000 });
    expect(judgeAttempt({ httpStatus: 503, retryAfter: '1', error: null }, 1, options)).toEqual({ kind: 'retry', delayMs: 5_000 });
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, caps them, and ignores anything else', () => {
    const now = Date.parse('2026-11-26T10:00:00Z');
    expect(parseRetryAfter('30', now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 26 Nov 2026 10:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Thu, 26 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('99999999', now)).toBe(RETRY_AFTER_CAP_MS);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
