/**
 * What an attempt's result means and when the next one is due (docs/webhooks.md#answers-retries-and-disabling),
 * as pure functions tested without a network or a clock; and the Standard Webhooks signature, made with
 * node:crypto and checked in test/webhooks/webhook-policy.test.ts against the specification's test vector and
 * against the `standardwebhooks` package's own `sign` (docs/decisions.md#dependencies: the package's HMAC is
 * pure JavaScript, 160–216 µs a signature on the benchmark machine against 24–30 µs).
 */
import crypto from 'node:crypto';

/** Svix's schedule, which docs/webhooks.md describes: at once, then these delays after each failure. */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  0,
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];

/** A Retry-After longer than this is taken as this: a receiver may slow us down, not park its events for days. */
export const RETRY_AFTER_CAP_MS = 6 * 3_600_000;
/** An endpoint whose every attempt has failed this long is disabled (reason 'failing'). */
export const FAILING_DISABLE_AFTER_MS = 5 * 86_400_000;
/** ± this share of each delay, so endpoints that failed together do not all retry in the same second. */
export const RETRY_JITTER = 0.1;

export interface AttemptResult {
  httpStatus: number | null;
  /** The Retry-After header as sent, if any. */
  retryAfter?: string | undefined;
  error: string | null;
}

export type AttemptVerdict =
  | { kind: 'succeeded' }
  /** 410 Gone: the receiver says the endpoint is no more; it is disabled and this delivery fails. */
  | { kind: 'gone' }
  | { kind: 'retry'; delayMs: number }
  | { kind: 'failed' };

/** Retry-After in seconds or as an HTTP date, as a delay from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, RETRY_AFTER_CAP_MS);
  // An HTTP date names its day and month ("Wed, 21 Oct 2015 07:28:00 GMT"); Date.parse alone would take "-5" for a year.
  if (!/^[A-Za-z]{3}, \d{1,2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now), RETRY_AFTER_CAP_MS);
}

/**
 * `step` is the number of attempts made in this round, the one just made included (1 after the first). A 2xx
 * succeeds; a 410 gives up and disables; anything else (another status, 3xx included as redirects are not
 * followed, a timeout, a refused connection or address) waits for the schedule's next delay, or Retry-After
 * when that is longer, and fails once the schedule is spent.
 */
export function judgeAttempt(
  result: AttemptResult,
  step: number,
  options: { schedule: readonly number[]; now: number; random?: () => number },
): AttemptVerdict {
  const status = result.httpStatus;
  if (status !== null && status >= 200 && status < 300) return { kind: 'succeeded' };
  if (status === 410) return { kind: 'gone' };
  const scheduled = options.schedule[step];
  if (scheduled === undefined) return { kind: 'failed' };
  const random = options.random ?? Math.random;
  const jittered = Math.round(scheduled * (1 + RETRY_JITTER * (2 * random() - 1)));
  const retryAfter = parseRetryAfter(result.retryAfter, options.now);
  return { kind: 'retry', delayMs: Math.max(jittered, retryAfter ?? 0) };
}

/** A new secret: `whsec_` and the base64 of 24 random bytes (the key is those bytes, as the spec says). */
export function newWebhookSecret(): string {
  return `whsec_${crypto.randomBytes(24).toString('base64')}`;
}

/** The key is the base64 after `whsec_` (the spec; the package accepts the prefix missing too). */
const keys = new Map<string, Buffer>();
function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size > 1000) keys.clear();
    key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
    keys.set(secret, key);
  }
  return key;
}

/**
 * The `webhook-signature` header: `v1,<base64 HMAC-SHA256 of id.timestamp.body>` for each secret, separated
 * by spaces (during a rotation the previous secret signs beside the current one, so either verifies).
 */
export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  return secrets
    .map(
      (secret) => `v1,${crypto.createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64')}`,
    )
    .join(' ');
}

/** The request body of Standard Webhooks: `{type, timestamp, data}`, `data` being the event's stored JSON. */
export function webhookBody(event: { type: string; created_at: number; payload: string }): string {
  return `{"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(new Date(event.created_at).toISOString())},"data":${event.payload}}`;
}
