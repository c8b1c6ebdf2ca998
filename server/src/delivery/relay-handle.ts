/**
 * One relay as this process sees it (relay-router.ts keeps one per relay it sends through): its transport, limits,
 * pacer, health and recent figures, and the pure reads of them (its state, its report). Its health changes with each
 * answer in relay-health-tracker.ts; its day's count (`maxPerDay`) is kept here.
 */
import type { RelayState } from '@outbox/contract';
import { median, type RelayReport } from '../relays/relay-health.js';
import type { RelaySettings } from '../relays/routing-table.js';
import { createPacer, type Pacer } from './relay-pacer.js';
import type { RelayTransport } from './relay-transport.js';

/** Sends remembered per relay for its observed rate and its median latency. */
const RECENT_SENDS = 64;

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
export function observedRate(starts: number[], now: number): number {
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

export interface RelayHandle {
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

/** What a relay's transport is built from: a change of any of these needs a new one. */
export const signatureOf = (relay: RelaySettings) =>
  JSON.stringify([relay.url, relay.tls, relay.credentials?.username, relay.credentials?.password, relay.maxConnections]);

/**
 * A new relay: idle until its first answer, paced at its own `maxPerSecond`, nothing sent today; `probeDelayMs` is its
 * first probe's delay should it go down.
 */
export function createRelayHandle(
  id: number,
  name: string,
  signature: string,
  transport: RelayTransport,
  limits: { maxPerSecond: number | null; maxPerDay: number | null },
  probeDelayMs: number,
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
    probeDelayMs,
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

/** The relay's state now: down, throttled, up, or idle until its first answer. */
export function stateOf(handle: RelayHandle): RelayState {
  if (handle.down) return 'down';
  if (handle.throttle) return 'throttled';
  return handle.answered ? 'up' : 'idle';
}

/**
 * Counts one message against the relay's day: false when its quota is reached. `giveBackToday` returns it (a send the
 * relay did not take), within the same day only.
 */
export function reserveToday(handle: RelayHandle): boolean {
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

export function giveBackToday(handle: RelayHandle, day: string): void {
  if (handle.day === day && handle.sentToday > 0) handle.sentToday -= 1;
}

/** What this process knows of the relay, for the health published with each heartbeat. */
export function reportOf(handle: RelayHandle): RelayReport {
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
}
