/** WORKER_IDLE_POLL: its default, units, and refusals that name the variable. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { configProblems } from '../support/config-problems.js';

const DATA_DIR = '/tmp/outbox-config-worker';

const problemsOf = (env: Record<string, string>): string[] => configProblems({ DATA_DIR, ...env });

describe('worker settings', () => {
  it('an idle worker looks for due mail every second by default, and the interval takes durations with units', () => {
    expect(loadConfig({ DATA_DIR }).workerIdlePollMs).toBe(1_000);
    expect(loadConfig({ DATA_DIR, WORKER_IDLE_POLL: '250ms' }).workerIdlePollMs).toBe(250);
    expect(loadConfig({ DATA_DIR, WORKER_IDLE_POLL: '30s' }).workerIdlePollMs).toBe(30_000);
    expect(loadConfig({ DATA_DIR, WORKER_IDLE_POLL: '1m' }).workerIdlePollMs).toBe(60_000);
  });

  it('refuses what is not a duration, and one outside 10ms to 60s, naming the variable', () => {
    expect(problemsOf({ WORKER_IDLE_POLL: 'often' })).toEqual([
      'WORKER_IDLE_POLL must be a duration such as 30s, 250ms, 24h or 3600, got "often"',
    ]);
    expect(problemsOf({ WORKER_IDLE_POLL: '5ms' })).toEqual(['WORKER_IDLE_POLL must be a duration from 10ms to 60s, got "5ms"']);
    expect(problemsOf({ WORKER_IDLE_POLL: '61s' })).toEqual(['WORKER_IDLE_POLL must be a duration from 10ms to 60s, got "61s"']);
  });
});
