/**
 * Named relays, routes, failover, rate limits and throttling in the worker (docs/relays.md).
 *
 * With no route in the store every mail goes to the default relay (RELAY_URL, or the capture relay) exactly as
 * before, through the same health and throttling as a named relay, and its events name no relay. Once routes exist,
 * a claimed mail's relays are those of the first route that matches it (relays/routing-table.ts), else the default
 * relay; each named relay a route names has a transport of its own (its URL, TLS policy, login and connections),
 * built by `createTransport` and rebuilt when its settings change.
 *
 * The parts: each relay as this process sees it (relay-handle.ts: its transport, limits, day's count and health),
 * what each answer does to its health (relay-health-tracker.ts: failover, throttling), one mail's send along its
 * route (routed-attempt.ts), the throttling rules (relay-throttling.ts) and the pacer (relay-pacer.ts).
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
import type { RelayReport } from '../relays/relay-health.js';
import {
  DEFAULT_RELAY_ID,
  routeOf,
  type RelaySettings,
  type RoutedMail,
  type RoutingDirectory,
  type RoutingTable,
} from '../relays/routing-table.js';
import { createRelayHandle, reportOf, signatureOf, stateOf, type RelayHandle } from './relay-handle.js';
import { createRelayHealthTracker, type RelayHealthOptions } from './relay-health-tracker.js';
import type { RelayTransport } from './relay-transport.js';
import { RoutedAttempt, type AttemptContext, type RoutedSend } from './routed-attempt.js';

export interface RelayRouterOptions extends RelayHealthOptions {
  directory: RoutingDirectory;
  /** RELAY_URL's transport (or the capture relay's): the default relay. The router never closes it. */
  defaultTransport: RelayTransport;
  /** A named relay's transport: its URL, TLS policy, login and maximum connections. */
  createTransport(relay: RelaySettings): RelayTransport;
}

export function createRelayRouter(options: RelayRouterOptions) {
  const { directory } = options;
  const health = createRelayHealthTracker(options);
  const handles = new Map<number, RelayHandle>();
  let syncedTable: RoutingTable | undefined;
  let isClosed = false;
  const attempts: AttemptContext = { health, isClosed: () => isClosed };

  const defaultHandle = createRelayHandle(
    DEFAULT_RELAY_ID,
    DEFAULT_RELAY_NAME,
    '',
    options.defaultTransport,
    { maxPerSecond: null, maxPerDay: null },
    health.minProbeDelayMs,
  );
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
      handles.set(
        relay.id,
        createRelayHandle(relay.id, relay.name, signature, options.createTransport(relay), relay, health.minProbeDelayMs),
      );
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
      if (table.routes.length === 0) return new RoutedAttempt(defaultOnly, false, attempts);
      const ids = routeOf(table, mail)?.relayIds ?? [DEFAULT_RELAY_ID];
      const route = ids.flatMap((id) => {
        const handle = handles.get(id);
        return handle ? [handle] : [];
      });
      return new RoutedAttempt(route.length > 0 ? route : defaultOnly, true, attempts);
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
      return [...handles.values()].map((handle) => {
        health.climb(handle, now);
        // The caller writes this very report: no separate write for a change found here.
        health.refreshState(handle, false);
        return reportOf(handle);
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
