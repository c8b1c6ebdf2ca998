/** This process's heartbeat (instances/heartbeat.ts). */
import type { EnvReader } from './env-reader.js';

export interface InstanceSettings {
  /** HEARTBEAT_INTERVAL and INSTANCE_STALE_AFTER (5 s, 15 s): this process's heartbeat (instances/heartbeat.ts). */
  heartbeatIntervalMs: number;
  instanceStaleAfterMs: number;
}

export function readInstanceSettings({ problems, durationMs }: EnvReader): InstanceSettings {
  const settings: InstanceSettings = {
    heartbeatIntervalMs: durationMs('HEARTBEAT_INTERVAL', 5_000),
    instanceStaleAfterMs: durationMs('INSTANCE_STALE_AFTER', 15_000),
  };
  // One late beat must not make a live instance look stopped.
  if (settings.instanceStaleAfterMs < 2 * settings.heartbeatIntervalMs) {
    problems.push(
      `INSTANCE_STALE_AFTER must be at least twice HEARTBEAT_INTERVAL (3 times is the default: 15s and 5s), got ${settings.instanceStaleAfterMs} ms and ${settings.heartbeatIntervalMs} ms`,
    );
  }
  return settings;
}
