/**
 * Relay health for readers (docs/relays.md#health): the live workers' reports folded into one `RelayHealth` per relay
 * (relay-health.ts), for `GET /api/v1/relays/health`, queue health's `relaysDown`, the relay alert rules and
 * `/metrics`. Rows of a stale instance are skipped by the same rule as its heartbeat (`isLive`), so a worker that
 * crashed stops counting 15 s after its last beat, and its rows go with its instance row an hour later.
 */
import type { RelayHealth, RelayState } from '@outbox/contract';
import type { Clock } from '../clock.js';
import { isLive } from '../instances/instance.service.js';
import type { DbOrTrx, Store } from '../store/connection.js';
import { foldRelayHealth, type InstanceRelayReport } from './relay-health.js';
import { listReportRows } from './relay-health.repository.js';
import { listRelayRows } from './relay.repository.js';

/** Every relay's health as the live workers report it at `now`: the default relay first, then the named ones by name. */
export async function readRelayHealth(db: DbOrTrx, now: number): Promise<RelayHealth[]> {
  const [rows, relays] = await Promise.all([listReportRows(db), listRelayRows(db)]);
  const reports = rows
    .filter((row) => isLive(row, now))
    .map((row): InstanceRelayReport => ({
      instanceId: row.instance_id,
      relay: row.relay,
      state: row.state as RelayState,
      since: row.since,
      ratePerSecond: row.rate_per_second,
      maxPerSecond: row.max_per_second,
      sentToday: row.sent_today,
      maxPerDay: row.max_per_day,
      lastError: row.last_error,
      lastErrorAt: row.last_error_at,
      latencyMs: row.latency_ms,
    }));
  return foldRelayHealth(
    relays.map((relay) => ({
      name: relay.name,
      maxPerSecond: relay.max_per_second === null ? null : Number(relay.max_per_second),
      maxPerDay: relay.max_per_day === null ? null : Number(relay.max_per_day),
    })),
    reports,
  );
}

export function createRelayHealthService({ store, clock }: { store: Store; clock: Clock }) {
  return {
    listRelayHealth: (): Promise<RelayHealth[]> => readRelayHealth(store.db, clock.now()),
    /** The names of the relays a live worker reports down, for queue health (the console's health strip). */
    async listRelaysDown(): Promise<string[]> {
      return (await readRelayHealth(store.db, clock.now())).filter((relay) => relay.state === 'down').map((relay) => relay.relay);
    },
  };
}

export type RelayHealthService = ReturnType<typeof createRelayHealthService>;
