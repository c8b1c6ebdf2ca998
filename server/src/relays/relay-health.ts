/**
 * Relay health (docs/relays.md#health): what one worker process reports of each relay it
 * sends through (`RelayReport`, made by delivery/relay-router.ts, kept in `relay_health` by
 * relay-health.repository.ts), and the pure fold of the live workers' reports into the contract's `RelayHealth`, one
 * per relay. The fold is the one home of "what the fleet says about a relay": the API, queue health's `relaysDown`,
 * the alert rules and `/metrics` all read it.
 */
import { DEFAULT_RELAY_NAME, type RelayHealth, type RelayState } from '@outbox/contract';

/** One worker process's view of one relay, as it publishes it. Instants are epoch milliseconds. */
export interface RelayReport {
  relay: string;
  state: RelayState;
  /** When it entered `state`; null while idle. */
  since: number | null;
  /** The rate this process paces it at now; null: unpaced (no maxPerSecond and no throttling reply). */
  ratePerSecond: number | null;
  maxPerSecond: number | null;
  /** Messages it took this UTC day in this process. */
  sentToday: number;
  maxPerDay: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
  /** Median time of its recent sends in this process. */
  latencyMs: number | null;
}

/** A report with the process that made it. */
export interface InstanceRelayReport extends RelayReport {
  instanceId: string;
}

/** The relays the store names, with their limits (the default relay has none). */
export interface KnownRelay {
  name: string;
  maxPerSecond: number | null;
  maxPerDay: number | null;
}

/** The worst state any live worker reports is the relay's: one worker that cannot reach it is worth knowing. */
const SEVERITY: Record<RelayState, number> = { down: 3, throttled: 2, up: 1, idle: 0 };

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The median of some figures (the mean of the middle two for an even count); null for none. */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * One `RelayHealth` per relay: the default relay first, then every named relay by name. `reports` are those of live
 * workers only (the caller drops stale instances); a relay nobody reported on is `idle`. Reports about relays the
 * store no longer names (removed or renamed since) are left out.
 */
export function foldRelayHealth(relays: readonly KnownRelay[], reports: readonly InstanceRelayReport[]): RelayHealth[] {
  const byRelay = new Map<string, InstanceRelayReport[]>();
  for (const report of reports) {
    const list = byRelay.get(report.relay);
    if (list) list.push(report);
    else byRelay.set(report.relay, [report]);
  }
  const known: KnownRelay[] = [
    { name: DEFAULT_RELAY_NAME, maxPerSecond: null, maxPerDay: null },
    ...[...relays].filter((r) => r.name !== DEFAULT_RELAY_NAME).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  ];
  return known.map((relay): RelayHealth => {
    const rows = byRelay.get(relay.name) ?? [];
    const worst = rows.reduce<InstanceRelayReport | undefined>((found, row) => {
      if (!found || SEVERITY[row.state] > SEVERITY[found.state]) return row;
      // Among workers in the same state, the one that has been in it longest says since when.
      if (SEVERITY[row.state] === SEVERITY[found.state] && row.since !== null && (found.since === null || row.since < found.since))
        return row;
      return found;
    }, undefined);
    const rates = rows.map((row) => row.ratePerSecond).filter((rate): rate is number => rate !== null);
    // The configured limits are the store's; the default relay's come from its reports (it has none today).
    const maxPerDay = relay.name === DEFAULT_RELAY_NAME ? (rows.find((row) => row.maxPerDay !== null)?.maxPerDay ?? null) : relay.maxPerDay;
    const maxPerSecond =
      relay.name === DEFAULT_RELAY_NAME ? (rows.find((row) => row.maxPerSecond !== null)?.maxPerSecond ?? null) : relay.maxPerSecond;
    const lastError = rows.reduce<InstanceRelayReport | undefined>(
      (latest, row) => (row.lastErrorAt !== null && (latest === undefined || row.lastErrorAt > latest.lastErrorAt!) ? row : latest),
      undefined,
    );
    return {
      relay: relay.name,
      state: worst?.state ?? 'idle',
      since: iso(worst?.since ?? null),
      ratePerSecond: rates.length === 0 ? null : Math.round(rates.reduce((sum, rate) => sum + rate, 0) * 100) / 100,
      maxPerSecond,
      sentToday: rows.reduce((sum, row) => sum + row.sentToday, 0),
      maxPerDay,
      // Each process counts against its own quota (docs/relays.md#named-relays): the fullest one is the one to watch.
      quotaUsed: maxPerDay === null ? null : Math.max(0, ...rows.map((row) => row.sentToday / maxPerDay)),
      lastError: lastError?.lastError ?? null,
      lastErrorAt: iso(lastError?.lastErrorAt ?? null),
      latencyMs: median(rows.map((row) => row.latencyMs).filter((ms): ms is number => ms !== null)),
      workers: rows.length,
    };
  });
}
