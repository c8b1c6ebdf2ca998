/**
 * Named relays, routes, failover and rate limits in the worker (docs/relays.md, PRODUCT.md §9, issue 38 items 1–3).
 *
 * With no route in the store the worker sends through its one transport (RELAY_URL, or the capture relay) exactly
 * as before: `route()` answers undefined. Once routes exist, a claimed mail's relays are those of the first route
 * that matches it (relays/routing-table.ts), else the default relay; each named relay has a transport of its own
 * (its URL, TLS policy, login and connections), built by `createTransport` and rebuilt when its settings change.
 *
 * Failover, within the attempt the claim counted (so it spends none of the mail's retry budget):
 * - a relay that cannot be reached (the attempt failed before MAIL FROM: connect, greeting, TLS, login; the
 *   outcome's `beforeTransaction`) is marked down, and the mail goes to the next relay of its route at once;
 * - a relay that has answered nothing but 4xx for DEFERRING_DOWN_AFTER_MS (at least three of them, none further
 *   apart than four times that) is marked down too, and the mail that found it so goes on. A 4xx means the relay
 *   did not take the mail, so nothing is sent twice: only an attempt that ended without a 250 moves on. An
 *   attempt cut after MAIL FROM (a timeout waiting for the end of DATA) stays the mail's ordinary unreachable
 *   attempt: the relay may have taken it.
 * - A down relay is skipped until its probe is due (1 s, doubling to 60 s while it stays down); then one send is let
 *   through as the probe, and an answer brings the relay back. When every relay of a route is down the mail is
 *   tried on them in order all the same, and its attempt counts as before.
 *
 * Rate: `maxPerSecond` spaces the relay's messages at least 1/rate apart, in this process (each worker process has
 * its own bucket; N processes may send N times the rate). `maxPerDay` counts the messages it took this UTC day, in
 * this process too; once reached, the relay is passed over like a down one until the day ends (every relay of the
 * route at its quota: the mail is deferred, 451, and retried on its backoff). Real time, not the worker's clock:
 * health and pacing are about the network.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_RELAY_NAME } from '@outbox/contract';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DEFAULT_RELAY_ID,
  routeOf,
  type RelaySettings,
  type RoutedMail,
  type RoutingDirectory,
  type RoutingTable,
} from '../relays/routing-table.js';
import type { WorkerLogger } from './outcome-commit.js';
import type { DeliveryOutcome, RelayMessage, RelayTransport } from './relay-transport.js';

export const DEFERRING_DOWN_AFTER_MS = 5_000;
/** A deferring relay is marked down only after this many 4xx in its streak: one slow greylisting is no outage. */
const MIN_DEFERRALS_FOR_DOWN = 3;
export const MIN_PROBE_DELAY_MS = 1_000;
export const MAX_PROBE_DELAY_MS = 60_000;

export interface RelayRouterOptions {
  directory: RoutingDirectory;
  /** RELAY_URL's transport (or the capture relay's): the default relay. The router never closes it. */
  defaultTransport: RelayTransport;
  /** A named relay's transport: its URL, TLS policy, login and maximum connections. */
  createTransport(relay: RelaySettings): RelayTransport;
  logger?: WorkerLogger | undefined;
  deferringDownAfterMs?: number;
  minProbeDelayMs?: number;
  maxProbeDelayMs?: number;
}

/** Where one attempt went, for its event: the relay that answered, and those passed over on the way. */
export interface RelayTrail {
  relay: string;
  passedOver?: Array<{ relay: string; reply: string }>;
}

/** One mail's way out: a transport that fails over along the mail's route, and what happened on the way. */
export interface RoutedSend {
  transport: RelayTransport;
  trail(): RelayTrail;
}

/** Paces sends at most `perSecond` a second, one at a time (a bucket of one token): N sends take ≥ (N−1)/rate. */
export function createPacer(perSecond: number) {
  const intervalMs = 1000 / perSecond;
  let nextAt = 0;
  return {
    perSecond,
    async take(): Promise<void> {
      const at = Math.max(performance.now(), nextAt);
      nextAt = at + intervalMs;
      // Timers round to whole milliseconds and may fire a little early: wait until the instant has truly passed.
      while (performance.now() < at) await sleep(Math.max(1, Math.ceil(at - performance.now())));
    },
  };
}

interface RelayHandle {
  id: number;
  name: string;
  signature: string;
  transport: RelayTransport;
  pacer: ReturnType<typeof createPacer> | undefined;
  /** `maxPerDay`, and the messages it took (or is taking) this UTC day, in this process. */
  maxPerDay: number | null;
  day: string;
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
      pacer: limits.maxPerSecond ? createPacer(limits.maxPerSecond) : undefined,
      maxPerDay: limits.maxPerDay,
      day: '',
      sentToday: 0,
      down: false,
      probeAt: 0,
      probeDelayMs: minProbeDelayMs,
      probing: false,
      deferringSince: null,
      lastDeferredAt: 0,
      deferredCount: 0,
    };
  }
  handles.set(
    DEFAULT_RELAY_ID,
    newHandle(DEFAULT_RELAY_ID, DEFAULT_RELAY_NAME, '', options.defaultTransport, { maxPerSecond: null, maxPerDay: null }),
  );

  /** Brings the transports in line with the table: new relays get one, changed ones a new one, removed ones none. */
  function sync(table: RoutingTable): void {
    if (table === syncedTable) return;
    syncedTable = table;
    for (const [id, handle] of handles) {
      if (id === DEFAULT_RELAY_ID || table.relays.has(id)) continue;
      handles.delete(id);
      void handle.transport.close();
    }
    for (const relay of table.relays.values()) {
      const signature = signatureOf(relay);
      const existing = handles.get(relay.id);
      if (existing && existing.signature === signature) {
        existing.name = relay.name;
        existing.maxPerDay = relay.maxPerDay;
        if ((existing.pacer?.perSecond ?? null) !== relay.maxPerSecond)
          existing.pacer = relay.maxPerSecond ? createPacer(relay.maxPerSecond) : undefined;
        continue;
      }
      // Changed where it connects or how: a new pool (the old one finishes its sends, then says QUIT).
      if (existing) void existing.transport.close();
      handles.set(relay.id, newHandle(relay.id, relay.name, signature, options.createTransport(relay), relay));
    }
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

  /** Whether the outcome sends the mail on to the next relay; updates the relay's health either way. */
  function observe(handle: RelayHandle, outcome: DeliveryOutcome, wasProbe: boolean): boolean {
    const now = performance.now();
    if (outcome.kind === 'unreachable' && outcome.beforeTransaction === true) {
      markDown(handle, wasProbe, outcome.reply);
      return true;
    }
    if (outcome.kind === 'deferred') {
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
        return true;
      }
      return false;
    }
    handle.deferringSince = null;
    markUp(handle);
    return false;
  }

  /**
   * Counts one message against the relay's day: 'full' when its quota is reached, else a function that gives the
   * message back (a send the relay did not take), within the same day only.
   */
  function reserveToday(handle: RelayHandle): 'full' | (() => void) {
    if (handle.maxPerDay === null) return () => undefined;
    const day = new Date().toISOString().slice(0, 10);
    if (handle.day !== day) {
      handle.day = day;
      handle.sentToday = 0;
    }
    if (handle.sentToday >= handle.maxPerDay) return 'full';
    handle.sentToday += 1;
    return () => {
      if (handle.day === day && handle.sentToday > 0) handle.sentToday -= 1;
    };
  }

  function routedSend(route: RelayHandle[]): RoutedSend {
    const answered: string[] = [];
    const passedOver: Array<{ relay: string; reply: string }> = [];
    const transport: RelayTransport = {
      async send(message: RelayMessage): Promise<DeliveryOutcome> {
        const now = performance.now();
        const usable = route.filter((h) => !h.down || (!h.probing && now >= h.probeAt));
        // Every relay of the route down: tried in order all the same, and the attempt counts as it always did.
        const candidates = usable.length > 0 ? usable : route;
        let last: DeliveryOutcome | undefined;
        for (const handle of candidates) {
          // A daily quota reached: the relay is passed over like a down one, until the next UTC day.
          const reservation = reserveToday(handle);
          if (reservation === 'full') {
            const reply = `Not sent: relay ${handle.name} took its ${handle.maxPerDay} messages of the day (maxPerDay)`;
            passedOver.push({ relay: handle.name, reply });
            last = { kind: 'deferred', code: 451, reply: `451 4.7.0 ${reply}`, durationMs: 0 };
            continue;
          }
          const wasProbe = handle.down && !handle.probing && now >= handle.probeAt;
          if (wasProbe) handle.probing = true;
          await handle.pacer?.take();
          const outcome = await handle.transport.send(message);
          // Only what the relay took counts against its day.
          if (outcome.kind !== 'sent') reservation();
          if (!observe(handle, outcome, wasProbe)) {
            if (!answered.includes(handle.name)) answered.push(handle.name);
            return outcome;
          }
          passedOver.push({ relay: handle.name, reply: outcome.reply });
          last = outcome;
        }
        const lastTried = candidates.at(-1)!.name;
        if (!answered.includes(lastTried)) answered.push(lastTried);
        return last!;
      },
      verify: () => route[0]!.transport.verify(),
      close: async () => undefined,
    };
    return {
      transport,
      trail: () => ({ relay: answered.join(', '), ...(passedOver.length > 0 ? { passedOver } : {}) }),
    };
  }

  return {
    /** The mail's way out, or undefined when no route exists (the worker's own transport, as before routes). */
    async route(mail: RoutedMail): Promise<RoutedSend | undefined> {
      const table = await directory.current();
      if (table.routes.length === 0) return undefined;
      sync(table);
      const ids = routeOf(table, mail)?.relayIds ?? [DEFAULT_RELAY_ID];
      const route = ids.flatMap((id) => {
        const handle = handles.get(id);
        return handle ? [handle] : [];
      });
      return routedSend(route.length > 0 ? route : [handles.get(DEFAULT_RELAY_ID)!]);
    },
    /** Each relay's state: for logs, the health endpoint later, and tests. */
    states(): Array<{ name: string; down: boolean }> {
      return [...handles.values()].map((h) => ({ name: h.name, down: h.down }));
    },
    /** Closes the named relays' transports (not the default one: its owner closes it). */
    async close(): Promise<void> {
      const named = [...handles.values()].filter((h) => h.id !== DEFAULT_RELAY_ID);
      await Promise.all(named.map((h) => h.transport.close()));
    },
  };
}

export type RelayRouter = ReturnType<typeof createRelayRouter>;
