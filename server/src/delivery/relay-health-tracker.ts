/**
 * What each answer of a relay does to its health in this process (docs/relays.md): down and back up (failover), and
 * its rate lowered by a throttle and climbing back (relay-throttling.ts). routed-attempt.ts asks it after each send
 * whether the mail moves on to the next relay of its route. Real time, not the worker's clock: health is about the
 * network.
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
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from '../logger.js';
import { observedRate, stateOf, type RelayHandle } from './relay-handle.js';
import type { DeliveryOutcome } from './relay-transport.js';
import { climbedRate, halvedRate } from './relay-throttling.js';

export const DEFERRING_DOWN_AFTER_MS = 5_000;
/** A deferring relay is marked down only after this many 4xx in its streak: one slow greylisting is no outage. */
const MIN_DEFERRALS_FOR_DOWN = 3;
export const MIN_PROBE_DELAY_MS = 1_000;
export const MAX_PROBE_DELAY_MS = 60_000;
/** A relay's last error is kept to this length (a reply may be long). */
const MAX_ERROR_LENGTH = 500;

export interface RelayHealthOptions {
  logger?: Logger | undefined;
  /** Called when a relay's state changes (up, throttled, down, idle), so it is published at once. */
  onHealthChange?: (() => void) | undefined;
  deferringDownAfterMs?: number;
  minProbeDelayMs?: number;
  maxProbeDelayMs?: number;
}

export function createRelayHealthTracker(options: RelayHealthOptions) {
  const { logger } = options;
  const deferringDownAfterMs = options.deferringDownAfterMs ?? DEFERRING_DOWN_AFTER_MS;
  const minProbeDelayMs = options.minProbeDelayMs ?? MIN_PROBE_DELAY_MS;
  const maxProbeDelayMs = options.maxProbeDelayMs ?? MAX_PROBE_DELAY_MS;

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

  return { minProbeDelayMs, refreshState, climb, record, observe };
}

export type RelayHealthTracker = ReturnType<typeof createRelayHealthTracker>;
