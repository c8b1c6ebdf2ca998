/**
 * Named relays, routes, failover, rate limits and throttling in the worker (docs/relays.md).
 *
 * With no route in the store every mail goes to the default relay (RELAY_URL, or the capture relay) exactly as
 * before, through the same health and throttling as a named relay, and its events name no relay. Once routes exist,
 * a claimed mail's relays are those of the first route that matches it (relays/routing-table.ts), else the default
 * relay; each named relay a route names has a transport of its own (its URL, TLS policy, login and connections),
 * built by `createTransport` and rebuilt when its settings change.
 *
 * Failover, within the attempt the claim counted (so it spends none of the mail's retry budget):
 * - a relay that cannot be reached (the attempt failed before MAIL FROM: connect, greeting, TLS, login; the
 *   outcome's `beforeTransaction`) is marked down, and the mail goes to the next relay of its route at once;
 * - a relay that has answered nothing but 4xx for DEFERRING_DOWN_AFTER_MS (at least three of them, none further
 *   apart than four times that) is marked down too, and the mail that found it so goes on. A 4xx means the relay
 *   did not take the mail, so nothing is sent twice: only an attempt that ended without a 250 moves on.
 * - a connection lost inside the transaction counts in that streak like a 4xx (and is no answer that brings a down
 *   relay back). Cut before the relay asked for the message (the outcome's `beforeMessage`: at MAIL FROM, RCPT or
 *   DATA, before its 354), the mail moves on at once, since nothing of the message left. An attempt cut after the
 *   message was handed over (a timeout waiting for the reply to its end) stays the mail's ordinary unreachable
 *   attempt, also when the streak marks the relay down: the relay may have taken it.
 * - A down relay is skipped until its probe is due (1 s, doubling to 60 s while it stays down); then one send is let
 *   through as the probe, and an answer brings the relay back. When every relay of a route is down the mail is
 *   tried on them in order all the same, and its attempt counts as before.
 *
 * Throttling (`isThrottlingReply`): a reply that asks for a slower sender halves the relay's rate in this process
 * (from its maxPerSecond, or from the rate it was seen sending at when it has none), at most once per round of sends
 * (a throttle answered to a send that left before the last decrease does not halve again), and the same mail is sent
 * again to the same relay within the same attempt once the lowered pacer lets it, up to MAX_THROTTLED_RESENDS times.
 * Each second without a throttling reply gives back a tenth of the rate it fell from (additive increase); once the
 * rate is back there, the relay is `up` again. A throttling reply is a 4xx, so it also counts towards "nothing but
 * 4xx for 5 s": a relay that throttles every mail (a daily quota spent) is marked down and its mails fail over.
 *
 * Rate: `maxPerSecond` spaces the relay's messages at least 1/rate apart, in this process (each worker process has
 * its own bucket; N processes may send N times the rate). `maxPerDay` counts the messages it took this UTC day, in
 * this process too; once reached, the relay is passed over like a down one until the day ends (every relay of the
 * route at its quota: the mail is deferred, 451, and retried on its backoff). Real time, not the worker's clock:
 * health and pacing are about the network.
 *
 * Health: each relay's state (`up`, `throttled`, `down`, `idle` until its first answer), since when, its rate,
 * messages today, last error and recent latency, read by `reports()` (the heartbeat publishes them,
 * relays/relay-health-publisher.ts); `onHealthChange` is called at once when a state changes.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_RELAY_NAME, type RelayState } from '@outbox/contract';
import { median, type RelayReport } from '../relays/relay-health.js';
import {
  DEFAULT_RELAY_ID,
  routeOf,
  type RelaySettings,
  type RoutedMail,
  type RoutingDirectory,
  type RoutingTable,
} from '../relays/routing-table.js';
import type { Logger } from '../logger.js';
import type { DeliveryOutcome, RelayMessage, RelayTransport } from './relay-transport.js';

export const DEFERRING_DOWN_AFTER_MS = 5_000;
/** A deferring relay is marked down only after this many 4xx in its streak: one slow greylisting is no outage. */
const MIN_DEFERRALS_FOR_DOWN = 3;
export const MIN_PROBE_DELAY_MS = 1_000;
export const MAX_PROBE_DELAY_MS = 60_000;
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
/** Sends remembered per relay for its observed rate and its median latency. */
const RECENT_SENDS = 64;
/** A relay's last error is kept to this length (a reply may be long). */
const MAX_ERROR_LENGTH = 500;

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
function hasThrottledRecipients(outcome: DeliveryOutcome): boolean {
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

export interface RelayRouterOptions {
  directory: RoutingDirectory;
  /** RELAY_URL's transport (or the capture relay's): the default relay. The router never closes it. */
  defaultTransport: RelayTransport;
  /** A named relay's transport: its URL, TLS policy, login and maximum connections. */
  createTransport(relay: RelaySettings): RelayTransport;
  logger?: Logger | undefined;
  /** Called when a relay's state changes (up, throttled, down, idle), so it is published at once. */
  onHealthChange?: (() => void) | undefined;
  deferringDownAfterMs?: number;
  minProbeDelayMs?: number;
  maxProbeDelayMs?: number;
}

/**
 * Where one attempt went, for its event: the relay that answered and those passed over on the way (only when routes
 * exist), and how many throttling replies it was sent again after.
 */
export interface RelayTrail {
  relay?: string;
  passedOver?: Array<{ relay: string; reply: string }>;
  throttled?: number;
}

/** One mail's way out: a transport that fails over along the mail's route, and what happened on the way. */
export interface RoutedSend {
  transport: RelayTransport;
  /** Undefined when there is nothing to tell (no routes, no throttling). */
  trail(): RelayTrail | undefined;
}

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

/** The last RECENT_SENDS values of a series (send times, latencies). */
function createRecent() {
  const values = new Float64Array(RECENT_SENDS);
  let next = 0;
  let count = 0;
  return {
    push(value: number): void {
      values[next] = value;
      next = (next + 1) % RECENT_SENDS;
      if (count < RECENT_SENDS) count += 1;
    },
    list(): number[] {
      return Array.from(values.subarray(0, count));
    },
  };
}

/** The rate sends left at lately: those of the last second, or, with more than the memory holds, over their span. */
function observedRate(starts: number[], now: number): number {
  const lastSecond = starts.filter((at) => now - at <= 1000).length;
  if (lastSecond < RECENT_SENDS) return Math.max(1, lastSecond);
  return ((RECENT_SENDS - 1) * 1000) / Math.max(1, Math.max(...starts) - Math.min(...starts));
}

const roundedOrNull = (value: number | null) => (value === null ? null : Math.round(value));

/** The UTC day of `ms`, and when it ends: the quota's day changes at most once per send's check. */
function utcDayOf(ms: number): { day: string; endsAt: number } {
  const day = new Date(ms).toISOString().slice(0, 10);
  return { day, endsAt: Date.parse(`${day}T00:00:00.000Z`) + 86_400_000 };
}

interface RelayHandle {
  id: number;
  name: string;
  signature: string;
  transport: RelayTransport;
  /** maxPerSecond as configured; the pacer's rate is lower while a throttle holds. */
  maxPerSecond: number | null;
  pacer: Pacer;
  /** `maxPerDay`, and the messages it took (or is taking) this UTC day, in this process. */
  maxPerDay: number | null;
  day: string;
  dayEndsAt: number;
  sentToday: number;
  down: boolean;
  /** When a down relay may be probed. */
  probeAt: number;
  probeDelayMs: number;
  probing: boolean;
  /** Since when every answer was a 4xx (null once anything else came), when the last came, and how many. */
  deferringSince: number | null;
  lastDeferredAt: number;
  deferredCount: number;
  /**
   * Set while a throttling reply holds the rate down: the rate it climbs back to, and when it was last halved and last
   * climbed (performance.now()).
   */
  throttle: { ceiling: number; decreasedAt: number; climbedAt: number } | undefined;
  /** When its recent sends left (performance.now()), and how long they took. */
  starts: ReturnType<typeof createRecent>;
  latencies: ReturnType<typeof createRecent>;
  /** Whether it answered anything since this process started: until then it is idle. */
  answered: boolean;
  lastError: string | null;
  lastErrorAt: number | null;
  /** The state last told (onHealthChange) and since when (epoch ms). */
  state: RelayState;
  stateSince: number | null;
}

const signatureOf = (relay: RelaySettings) =>
  JSON.stringify([relay.url, relay.tls, relay.credentials?.username, relay.credentials?.password, relay.maxConnections]);

export function createRelayRouter(options: RelayRouterOptions) {
  const { directory, logger } = options;
  const deferringDownAfterMs = options.deferringDownAfterMs ?? DEFERRING_DOWN_AFTER_MS;
  const minProbeDelayMs = options.minProbeDelayMs ?? MIN_PROBE_DELAY_MS;
  const maxProbeDelayMs = options.maxProbeDelayMs ?? MAX_PROBE_DELAY_MS;
  const handles = new Map<number, RelayHandle>();
  let syncedTable: RoutingTable | undefined;
  let isClosed = false;

  function newHandle(
    id: number,
    name: string,
    signature: string,
    transport: RelayTransport,
    limits: { maxPerSecond: number | null; maxPerDay: number | null },
  ): RelayHandle {
    return {
      id,
      name,
      signature,
      transport,
      maxPerSecond: limits.maxPerSecond,
      pacer: createPacer(limits.maxPerSecond),
      maxPerDay: limits.maxPerDay,
      day: '',
      dayEndsAt: 0,
      sentToday: 0,
      down: false,
      probeAt: 0,
      probeDelayMs: minProbeDelayMs,
      probing: false,
      deferringSince: null,
      lastDeferredAt: 0,
      deferredCount: 0,
      throttle: undefined,
      starts: createRecent(),
      latencies: createRecent(),
      answered: false,
      lastError: null,
      lastErrorAt: null,
      state: 'idle',
      stateSince: null,
    };
  }
  const defaultHandle = newHandle(DEFAULT_RELAY_ID, DEFAULT_RELAY_NAME, '', options.defaultTransport, {
    maxPerSecond: null,
    maxPerDay: null,
  });
  handles.set(DEFAULT_RELAY_ID, defaultHandle);
  const defaultOnly = [defaultHandle];

  /**
   * Brings the transports in line with the table: a relay a route names gets one (a new one when its settings
   * changed); one that no route names any more loses it, with its health (it is idle to this process).
   */
  function sync(table: RoutingTable): void {
    if (table === syncedTable) return;
    syncedTable = table;
    const named = new Set(table.routes.flatMap((route) => route.relayIds));
    for (const [id, handle] of handles) {
      if (id === DEFAULT_RELAY_ID || (table.relays.has(id) && named.has(id))) continue;
      handles.delete(id);
      handle.pacer.releaseAll();
      void handle.transport.close();
    }
    for (const relay of table.relays.values()) {
      if (!named.has(relay.id)) continue;
      const signature = signatureOf(relay);
      const existing = handles.get(relay.id);
      if (existing && existing.signature === signature) {
        existing.name = relay.name;
        existing.maxPerDay = relay.maxPerDay;
        if (existing.maxPerSecond !== relay.maxPerSecond) {
          existing.maxPerSecond = relay.maxPerSecond;
          const throttle = existing.throttle;
          if (!throttle) existing.pacer.setRate(relay.maxPerSecond);
          else {
            // Throttled: it climbs back to the new limit, and never runs above it meanwhile.
            if (relay.maxPerSecond !== null) throttle.ceiling = relay.maxPerSecond;
            existing.pacer.setRate(Math.min(existing.pacer.perSecond ?? throttle.ceiling, throttle.ceiling));
          }
        }
        continue;
      }
      // Changed where it connects or how: a new pool (the old one finishes its sends, then says QUIT).
      if (existing) {
        existing.pacer.releaseAll();
        void existing.transport.close();
      }
      handles.set(relay.id, newHandle(relay.id, relay.name, signature, options.createTransport(relay), relay));
    }
  }

  function stateOf(handle: RelayHandle): RelayState {
    if (handle.down) return 'down';
    if (handle.throttle) return 'throttled';
    return handle.answered ? 'up' : 'idle';
  }

  /** Notes a new state and since when; tells the publisher at once unless it is the one asking (`notify` false). */
  function refreshState(handle: RelayHandle, notify = true): void {
    const state = stateOf(handle);
    if (state === handle.state) return;
    handle.state = state;
    handle.stateSince = state === 'idle' ? null : Date.now();
    if (notify) options.onHealthChange?.();
  }

  function markDown(handle: RelayHandle, wasProbe: boolean, reason: string): void {
    const now = performance.now();
    if (handle.down && !wasProbe) return;
    handle.probeDelayMs = wasProbe ? Math.min(maxProbeDelayMs, handle.probeDelayMs * 2) : minProbeDelayMs;
    handle.probeAt = now + handle.probeDelayMs;
    handle.probing = false;
    if (!handle.down) logger?.warn({ relay: handle.name, reply: reason }, 'relay down: its mails go to the next relay of their route');
    handle.down = true;
  }

  function markUp(handle: RelayHandle): void {
    if (handle.down) logger?.info({ relay: handle.name }, 'relay answers again: its mails come back to it');
    handle.down = false;
    handle.probing = false;
    handle.probeDelayMs = minProbeDelayMs;
  }

  /** Multiplicative decrease, once per round of sends: a throttle answered to a send that left before the last one does not count again. */
  function slowDown(handle: RelayHandle, startedAt: number, now: number): void {
    const throttle = handle.throttle;
    if (throttle && startedAt < throttle.decreasedAt) return;
    const sendingAt = handle.pacer.perSecond ?? observedRate(handle.starts.list(), now);
    const rate = halvedRate(sendingAt);
    handle.throttle = {
      ceiling: handle.maxPerSecond ?? throttle?.ceiling ?? sendingAt,
      decreasedAt: now,
      climbedAt: now,
    };
    handle.pacer.setRate(rate);
    if (!throttle)
      logger?.warn(
        { relay: handle.name, ratePerSecond: rate, fromPerSecond: Math.round(sendingAt * 100) / 100 },
        'relay throttles: its rate is lowered, and its mails are sent again without spending their retry budget',
      );
  }

  /** Additive increase for the time since the last climb without a throttling reply; back at the ceiling, recovered. */
  function climb(handle: RelayHandle, now: number): void {
    const throttle = handle.throttle;
    if (!throttle) return;
    const rate = climbedRate(handle.pacer.perSecond ?? throttle.ceiling, throttle.ceiling, now - throttle.climbedAt);
    throttle.climbedAt = now;
    if (rate < throttle.ceiling) {
      handle.pacer.setRate(rate);
      return;
    }
    handle.throttle = undefined;
    handle.pacer.setRate(handle.maxPerSecond);
    logger?.info({ relay: handle.name, ratePerSecond: handle.maxPerSecond }, 'relay rate recovered from throttling');
  }

  /** The relay's figures after one answer: latency, last error, and its rate (down on a throttle, up on a clean answer). */
  function record(handle: RelayHandle, outcome: DeliveryOutcome, startedAt: number, throttled: boolean): void {
    // The mail itself could not be sent (no recipients, unreadable): nothing about the relay.
    if (outcome.kind === 'invalid') return;
    const now = performance.now();
    handle.answered = true;
    // A connection that failed says how long the failure took, not how fast the relay answers.
    if (outcome.kind !== 'unreachable') handle.latencies.push(outcome.durationMs);
    if (outcome.kind !== 'sent') {
      handle.lastError = outcome.reply.length > MAX_ERROR_LENGTH ? `${outcome.reply.slice(0, MAX_ERROR_LENGTH)}…` : outcome.reply;
      handle.lastErrorAt = Date.now();
    }
    if (throttled) slowDown(handle, startedAt, now);
    else if (outcome.kind !== 'unreachable') climb(handle, now);
  }

  /** Whether the outcome sends the mail on to the next relay; updates the relay's health either way. */
  function observe(handle: RelayHandle, outcome: DeliveryOutcome, wasProbe: boolean, throttled: boolean): boolean {
    const now = performance.now();
    if (outcome.kind === 'unreachable' && outcome.beforeTransaction === true && !throttled) {
      markDown(handle, wasProbe, outcome.reply);
      return true;
    }
    // A connection lost inside the transaction (a relay killed mid-flood) is no answer: it counts in the streak below
    // like a 4xx, and never brings a down relay back. The mail moves on only when the relay cannot have it: the cut
    // came before the relay asked for the message (`beforeMessage`: at MAIL FROM, RCPT or DATA). Cut later, the relay
    // may have taken it, so it stays the mail's ordinary retry. The relay is not marked down for one cut (the next
    // connection says whether it is there).
    const isCut = outcome.kind === 'unreachable' && !throttled;
    const isCutBeforeMessage = isCut && outcome.beforeMessage === true;
    const mayHaveMail = isCut && !isCutBeforeMessage;
    // A throttle is a 4xx too (also a 421 that ended the connection before MAIL FROM): the relay is there, slower.
    if (outcome.kind === 'deferred' || throttled || isCut) {
      // A streak: 4xx answers with nothing else between them and no long quiet (four windows) either: two 4xx an
      // hour apart are no outage.
      if (handle.deferringSince === null || now - handle.lastDeferredAt > 4 * deferringDownAfterMs) {
        handle.deferringSince = now;
        handle.deferredCount = 0;
      }
      handle.lastDeferredAt = now;
      handle.deferredCount += 1;
      if (wasProbe || (now - handle.deferringSince >= deferringDownAfterMs && handle.deferredCount >= MIN_DEFERRALS_FOR_DOWN)) {
        markDown(handle, wasProbe, outcome.reply);
        return !mayHaveMail;
      }
      return isCutBeforeMessage;
    }
    handle.deferringSince = null;
    markUp(handle);
    return false;
  }

  /**
   * Counts one message against the relay's day: false when its quota is reached. `giveBack` returns it (a send the
   * relay did not take), within the same day only.
   */
  function reserveToday(handle: RelayHandle): boolean {
    const now = Date.now();
    if (now >= handle.dayEndsAt) {
      const { day, endsAt } = utcDayOf(now);
      handle.day = day;
      handle.dayEndsAt = endsAt;
      handle.sentToday = 0;
    }
    if (handle.maxPerDay !== null && handle.sentToday >= handle.maxPerDay) return false;
    handle.sentToday += 1;
    return true;
  }

  function giveBack(handle: RelayHandle, day: string): void {
    if (handle.day === day && handle.sentToday > 0) handle.sentToday -= 1;
  }

  /** The outcome of a mail the router let go of without sending it: the worker is stopping. */
  const closedOutcome: DeliveryOutcome = {
    kind: 'unreachable',
    reply: 'Not sent: the worker stopped while the relay’s rate held the mail back',
    durationMs: 0,
    beforeTransaction: true,
  };

  /**
   * One mail's way along its route, and what happened on the way: its own transport (a class, so that the send path
   * of every mail allocates one object, not a closure per step). `named`: routes exist, so the trail names the
   * relays (the events say which relay took each attempt); without routes only throttling is told.
   */
  class RoutedAttempt implements RoutedSend, RelayTransport {
    private answered: string[] | undefined;
    private passedOver: Array<{ relay: string; reply: string }> | undefined;
    private throttled = 0;

    constructor(
      private readonly route: RelayHandle[],
      private readonly named: boolean,
    ) {}

    get transport(): RelayTransport {
      return this;
    }

    private answeredBy(handle: RelayHandle): void {
      if (!this.named) return;
      this.answered ??= [];
      if (!this.answered.includes(handle.name)) this.answered.push(handle.name);
    }

    private passOver(relay: string, reply: string): void {
      (this.passedOver ??= []).push({ relay, reply });
    }

    async send(message: RelayMessage): Promise<DeliveryOutcome> {
      const { route } = this;
      const now = performance.now();
      const usable = route.length === 1 ? route : route.filter((h) => !h.down || (!h.probing && now >= h.probeAt));
      // Every relay of the route down: tried in order all the same, and the attempt counts as it always did.
      const candidates = usable.length > 0 ? usable : route;
      let last: DeliveryOutcome | undefined;
      for (const handle of candidates) {
        let resends = 0;
        for (;;) {
          // A daily quota reached: the relay is passed over like a down one, until the next UTC day.
          if (!reserveToday(handle)) {
            const reply = `Not sent: relay ${handle.name} took its ${handle.maxPerDay} messages of the day (maxPerDay)`;
            last = { kind: 'deferred', code: 451, reply: `451 4.7.0 ${reply}`, durationMs: 0 };
            this.passOver(handle.name, reply);
            break;
          }
          const day = handle.day;
          if (handle.pacer.perSecond !== null) await handle.pacer.take();
          if (isClosed) {
            giveBack(handle, day);
            return closedOutcome;
          }
          const wasProbe = handle.down && !handle.probing && performance.now() >= handle.probeAt;
          if (wasProbe) handle.probing = true;
          const startedAt = performance.now();
          handle.starts.push(startedAt);
          const outcome = await handle.transport.send(message);
          // Only what the relay took counts against its day.
          if (outcome.kind !== 'sent') giveBack(handle, day);
          const isThrottle = isThrottlingOutcome(outcome);
          record(handle, outcome, startedAt, isThrottle || hasThrottledRecipients(outcome));
          const moveOn = observe(handle, outcome, wasProbe, isThrottle);
          refreshState(handle);
          // A throttle: the same mail again, to the same relay, once its lowered rate lets it (within this attempt).
          if (isThrottle && !moveOn && resends < MAX_THROTTLED_RESENDS && !isClosed) {
            resends += 1;
            this.throttled += 1;
            continue;
          }
          if (!moveOn) {
            this.answeredBy(handle);
            return outcome;
          }
          this.passOver(handle.name, outcome.reply);
          last = outcome;
          break;
        }
      }
      this.answeredBy(candidates.at(-1)!);
      return last!;
    }

    verify(): Promise<boolean> {
      return this.route[0]!.transport.verify();
    }

    async close(): Promise<void> {}

    trail(): RelayTrail | undefined {
      if (!this.named) return this.throttled > 0 ? { throttled: this.throttled } : undefined;
      return {
        relay: (this.answered ?? []).join(', '),
        ...(this.passedOver ? { passedOver: this.passedOver } : {}),
        ...(this.throttled > 0 ? { throttled: this.throttled } : {}),
      };
    }
  }

  return {
    /**
     * The mail's way out: through its route's relays when routes exist, else through the default relay alone (as
     * before routes: nothing in its events names a relay), with health and throttling either way.
     */
    async route(mail: RoutedMail): Promise<RoutedSend> {
      const table = await directory.current();
      sync(table);
      if (table.routes.length === 0) return new RoutedAttempt(defaultOnly, false);
      const ids = routeOf(table, mail)?.relayIds ?? [DEFAULT_RELAY_ID];
      const route = ids.flatMap((id) => {
        const handle = handles.get(id);
        return handle ? [handle] : [];
      });
      return new RoutedAttempt(route.length > 0 ? route : defaultOnly, true);
    },
    /** Each relay's state: for logs and tests. */
    states(): Array<{ name: string; down: boolean; state: RelayState; ratePerSecond: number | null }> {
      return [...handles.values()].map((h) => ({ name: h.name, down: h.down, state: stateOf(h), ratePerSecond: h.pacer.perSecond }));
    },
    /**
     * What this process knows of each relay it sends through (the default one and those its routes name), for the
     * health published with each heartbeat. A throttled relay's quiet time counts towards its recovery here too, so
     * that one left alone after a flood is seen `up` again.
     */
    reports(): RelayReport[] {
      const now = performance.now();
      return [...handles.values()].map((handle): RelayReport => {
        climb(handle, now);
        // The caller writes this very report: no separate write for a change found here.
        refreshState(handle, false);
        const rate = handle.pacer.perSecond;
        return {
          relay: handle.name,
          state: handle.state,
          since: handle.stateSince,
          ratePerSecond: rate === null ? null : Math.round(rate * 100) / 100,
          maxPerSecond: handle.maxPerSecond,
          sentToday: Date.now() < handle.dayEndsAt ? handle.sentToday : 0,
          maxPerDay: handle.maxPerDay,
          lastError: handle.lastError,
          lastErrorAt: handle.lastErrorAt,
          latencyMs: roundedOrNull(median(handle.latencies.list())),
        };
      });
    },
    /** Closes the named relays' transports (not the default one: its owner closes it); mails held by a pacer are not sent. */
    async close(): Promise<void> {
      isClosed = true;
      for (const handle of handles.values()) handle.pacer.releaseAll();
      const named = [...handles.values()].filter((h) => h.id !== DEFAULT_RELAY_ID);
      await Promise.all(named.map((h) => h.transport.close()));
    },
  };
}

export type RelayRouter = ReturnType<typeof createRelayRouter>;
