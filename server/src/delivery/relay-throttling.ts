/**
 * What a throttling reply is, and what it does to a relay's rate (docs/relays.md#throttling): pure rules, applied by
 * relay-health-tracker.ts (the rate) and routed-attempt.ts (the resend).
 *
 * Throttling (`isThrottlingReply`): a reply that asks for a slower sender halves the relay's rate in this process
 * (from its maxPerSecond, or from the rate it was seen sending at when it has none), at most once per round of sends
 * (a throttle answered to a send that left before the last decrease does not halve again), and the same mail is sent
 * again to the same relay within the same attempt once the lowered pacer lets it, up to MAX_THROTTLED_RESENDS times.
 * Each second without a throttling reply gives back a tenth of the rate it fell from (additive increase); once the
 * rate is back there, the relay is `up` again. A throttling reply is a 4xx, so it also counts towards "nothing but
 * 4xx for 5 s": a relay that throttles every mail (a daily quota spent) is marked down and its mails fail over.
 */
import type { DeliveryOutcome } from './relay-transport.js';

/**
 * A mail answered with a throttling reply is sent again within its attempt at most this many times; then the reply is
 * the attempt's outcome (an ordinary deferral, on the retry budget). Each resend waits for the lowered rate, so this
 * bounds only a relay that keeps throttling every mail without answering "nothing but 4xx" long enough to be down.
 */
export const MAX_THROTTLED_RESENDS = 10;
/** The lowest rate a throttled relay is paced at: one message every five seconds. */
export const MIN_RATE_PER_SECOND = 0.2;
/** Each second without a throttling reply gives a throttled relay back this share of the rate it is climbing to. */
export const CLIMB_SHARE_PER_SECOND = 0.1;

/** The codes a throttling reply comes with (isThrottlingReply). */
const THROTTLING_CODES = new Set([421, 450, 451, 454]);

/**
 * Whether an SMTP reply asks Outbox to send more slowly (SES: `454 Throttling failure: Maximum sending rate
 * exceeded`), rather than to give up on the mail or to try this one mail again later. `code` is read from the reply's
 * first three digits when not given (a 421 greeting reaches the router as an unreachable outcome's text). Pure, and
 * exported so that every rule is tested without a network (test/relays/relay-throttling.test.ts).
 */
export function isThrottlingReply(reply: string, code?: number): boolean {
  const replyCode = code ?? Number(/^\s*(\d{3})(?:[ -]|$)/.exec(reply)?.[1] ?? Number.NaN);
  // Only a transient reply: a 5xx refuses the mail itself, and sending slower would not change it. 452 is left out:
  // "too many recipients" asks for smaller transactions and "insufficient system storage" is the relay's disk.
  if (!THROTTLING_CODES.has(replyCode)) return false;
  // An enhanced status about the address (4.1.x) or the mailbox (4.2.x: "4.2.2 over quota", Gmail's "4.2.1 receiving
  // mail too quickly") is one recipient's state, which a slower sender does not change.
  const enhanced = /\b4\.(\d{1,3})\.\d{1,3}\b/.exec(reply);
  if (enhanced && (enhanced[1] === '1' || enhanced[1] === '2')) return false;
  // Greylisting ("451 4.7.1 Greylisting in action, please come back later") asks for this mail again later, not for a
  // slower sender: the ordinary backoff is what it wants.
  if (/gr[ae]y-?list/i.test(reply)) return false;
  // A rate named: SES's "Throttling failure: Maximum sending rate exceeded", Exim's "rate limit exceeded", Gmail's
  // "421 4.7.28 … unusual rate of unsolicited mail", "ratelimited".
  if (/throttl|\brate\b|\bratelimit/i.test(reply)) return true;
  // Too much at once: Postfix's "421 4.7.0 Error: too many connections from …", smtp-server's "421 Too many connected
  // clients", "450 too many messages in this session", Exchange's "maximum number of concurrent connections".
  if (/too many (concurrent |simultaneous |parallel )?(connect|session|client|message|mail|e-?mail|deliver|request)/i.test(reply))
    return true;
  if (/concurrent connections|too fast|too quickly|slow down/i.test(reply)) return true;
  // A sending quota (SES: "Daily message quota exceeded"): slowing down does not bring tomorrow sooner, but the mail is
  // not at fault either; should every mail be refused, the relay is marked down and its mails fail over.
  if (/\b(message|sending|send|daily|hourly) quota\b/i.test(reply)) return true;
  // "Try again later" alone is how any temporary failure is phrased (greylisting, a lookup that timed out); on a 421,
  // though, the relay closes the connection on a sender it finds too busy: Gmail's "421 4.7.0 Try again later,
  // closing connection", "421 Server busy".
  if (replyCode === 421 && /\b(try|come back|retry)( again)? later\b|\bbusy\b/i.test(reply)) return true;
  return false;
}

/** Whether an attempt's outcome is a throttling reply (a 4xx, or a 421 greeting that ended the connection). */
export function isThrottlingOutcome(outcome: DeliveryOutcome): boolean {
  if (outcome.kind === 'deferred') return isThrottlingReply(outcome.reply, outcome.code);
  // A 421 (or 450/454) before MAIL FROM arrives as "unreachable" with the relay's text; a timeout or a refused
  // connection has no reply code and is no throttle.
  if (outcome.kind === 'unreachable') return isThrottlingReply(outcome.reply);
  return false;
}

/**
 * Whether a mail the relay took had recipients throttled at RCPT: the relay's rate goes down, but the mail is not sent
 * again (its accepted recipients have it); those recipients are retried on the mail's backoff.
 */
export function hasThrottledRecipients(outcome: DeliveryOutcome): boolean {
  return outcome.kind === 'sent' && (outcome.recipients ?? []).some((r) => r.outcome === 'deferred' && isThrottlingReply(r.reply));
}

/** Multiplicative decrease: half the rate the relay was sent at, never below MIN_RATE_PER_SECOND. */
export function halvedRate(sendingAt: number): number {
  return Math.max(MIN_RATE_PER_SECOND, sendingAt / 2);
}

/** Additive increase: `rate` after `elapsedMs` without a throttling reply, never above `ceiling`. */
export function climbedRate(rate: number, ceiling: number, elapsedMs: number): number {
  return Math.min(ceiling, rate + (ceiling * CLIMB_SHARE_PER_SECOND * Math.max(0, elapsedMs)) / 1000);
}
