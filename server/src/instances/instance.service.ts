/**
 * Who is running: the heartbeat rows as the contract's `Instance`, each judged live or stale by the
 * rule its own writer declared (stale_after_ms, 15 s by default). Read whole on every call: the table holds the
 * running processes plus the stale ones of the last hour.
 */
import { INSTANCE_ROLES, type Instance, type InstanceRole, type InstancesResponse } from '@outbox/contract';
import type { Clock } from '../clock.js';
import type { Store } from '../store/connection.js';
import type { InstanceRow } from '../store/schema.js';
import * as repo from './instance.repository.js';

export function parseRoles(roles: string): InstanceRole[] {
  return roles.split(',').filter((role): role is InstanceRole => (INSTANCE_ROLES as readonly string[]).includes(role));
}

/** Live while its last heartbeat is at most stale_after_ms old. Pure, so the rule is tested without a clock. */
export function isLive(row: Pick<InstanceRow, 'last_heartbeat_at' | 'stale_after_ms'>, now: number): boolean {
  return now - row.last_heartbeat_at <= row.stale_after_ms;
}

export function toInstance(row: InstanceRow, now: number): Instance {
  return {
    id: row.id,
    host: row.host,
    pid: row.pid,
    version: row.version,
    roles: parseRoles(row.roles),
    startedAt: new Date(row.started_at).toISOString(),
    lastHeartbeatAt: new Date(row.last_heartbeat_at).toISOString(),
    heartbeatAgeSeconds: Math.max(0, (now - row.last_heartbeat_at) / 1000),
    staleAfterSeconds: row.stale_after_ms / 1000,
    state: isLive(row, now) ? 'live' : 'stale',
    inFlight: row.in_flight,
    deliveredLastMinute: row.delivered_last_minute,
  };
}

export interface InstanceCounts {
  liveInstances: number;
  staleInstances: number;
  liveWorkers: number;
}

export function createInstanceService({ store, clock }: { store: Store; clock: Clock }) {
  async function listInstances(): Promise<InstancesResponse> {
    const now = clock.now();
    const instances = (await repo.listInstances(store.db))
      .map((row) => toInstance(row, now))
      .sort((a, b) =>
        a.state === b.state ? b.startedAt.localeCompare(a.startedAt) || a.id.localeCompare(b.id) : a.state === 'live' ? -1 : 1,
      );
    const live = instances.filter((instance) => instance.state === 'live');
    return {
      data: instances,
      meta: {
        at: new Date(now).toISOString(),
        liveInstances: live.length,
        liveWorkers: live.filter((instance) => instance.roles.includes('worker')).length,
      },
    };
  }

  /** For queue health and /metrics. */
  async function countInstances(): Promise<InstanceCounts> {
    const now = clock.now();
    const rows = await repo.listInstances(store.db);
    const live = rows.filter((row) => isLive(row, now));
    return {
      liveInstances: live.length,
      staleInstances: rows.length - live.length,
      liveWorkers: live.filter((row) => parseRoles(row.roles).includes('worker')).length,
    };
  }

  return { listInstances, countInstances };
}

export type InstanceService = ReturnType<typeof createInstanceService>;
