/** `outbox instances` as a table for a terminal (the same rows as GET /api/v1/instances; --json prints those). */
import type { InstancesResponse } from '@outbox/contract';
import { formatTextTable } from './text-table.js';

/** 4 s, 12 min, 3 h 5 min, 2 d 4 h. */
export function formatSeconds(seconds: number): string {
  const whole = Math.floor(seconds);
  if (whole < 60) return `${whole} s`;
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

export function formatInstances({ data, meta }: InstancesResponse): string[] {
  const summary = `${meta.liveInstances} live ${meta.liveInstances === 1 ? 'instance' : 'instances'}, ${
    meta.liveWorkers === 0 ? 'no worker running' : `${meta.liveWorkers} ${meta.liveWorkers === 1 ? 'worker' : 'workers'}`
  }${data.length > meta.liveInstances ? `, ${data.length - meta.liveInstances} stale` : ''}.`;
  if (data.length === 0) return ['No instance has written a heartbeat in the last hour.', summary];
  const now = Date.parse(meta.at);
  const rows = data.map((instance) => [
    instance.id.slice(0, 8),
    instance.state === 'live' ? 'live' : `STALE (${formatSeconds(instance.heartbeatAgeSeconds)} silent)`,
    instance.roles.join(',') || '-',
    `${instance.host}:${instance.pid}`,
    instance.version,
    `${formatSeconds((now - Date.parse(instance.startedAt)) / 1000)} ago`,
    `${formatSeconds(instance.heartbeatAgeSeconds)} ago`,
    instance.inFlight === null ? '-' : String(instance.inFlight),
    instance.deliveredLastMinute === null ? '-' : String(instance.deliveredLastMinute),
  ]);
  const header = ['ID', 'STATE', 'ROLES', 'HOST:PID', 'VERSION', 'STARTED', 'HEARTBEAT', 'IN FLIGHT', 'DELIVERED 1 MIN'];
  return [...formatTextTable(header, rows), summary];
}
