/** HEARTBEAT_INTERVAL and INSTANCE_STALE_AFTER: defaults, units, and refusals that name the variable. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { configProblems } from '../support/config-problems.js';

const problemsOf = (env: Record<string, string>): string[] => configProblems({ DATA_DIR: '/tmp/outbox-config-heartbeat', ...env });

describe('heartbeat settings', () => {
  it('default to a beat every 5 s, stale after 15 s, and take durations with units', () => {
    expect(loadConfig({ DATA_DIR: '/tmp/outbox-config-heartbeat' })).toMatchObject({
      heartbeatIntervalMs: 5_000,
      instanceStaleAfterMs: 15_000,
    });
    expect(loadConfig({ DATA_DIR: '/tmp/outbox-config-heartbeat', HEARTBEAT_INTERVAL: '500ms', INSTANCE_STALE_AFTER: '3s' })).toMatchObject(
      {
        heartbeatIntervalMs: 500,
        instanceStaleAfterMs: 3_000,
      },
    );
  });

  it('refuse what is not a duration, and a stale threshold under two beats, naming the variables', () => {
    expect(problemsOf({ HEARTBEAT_INTERVAL: 'often' })).toEqual([
      'HEARTBEAT_INTERVAL must be a duration such as 30s, 250ms, 24h or 3600, got "often"',
    ]);
    expect(problemsOf({ INSTANCE_STALE_AFTER: '0' })).toEqual([
      'INSTANCE_STALE_AFTER must be a duration such as 30s, 250ms, 24h or 3600, got "0"',
    ]);
    expect(problemsOf({ HEARTBEAT_INTERVAL: '10s', INSTANCE_STALE_AFTER: '15s' })).toEqual([
      'INSTANCE_STALE_AFTER must be at least twice HEARTBEAT_INTERVAL (3 times is the default: 15s and 5s), got 15000 ms and 10000 ms',
    ]);
  });
});
