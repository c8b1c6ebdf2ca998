/** `outbox instances` without --json: the table a person reads (pure; the CLI process itself is in test/instances/). */
import type { Instance } from '@outbox/contract';
import { describe, expect, it } from 'vitest';
import { formatInstances, formatSeconds } from '../../src/cli/instances-table.js';

const base: Instance = {
  id: '3f9a0c1d2e4b5a67',
  host: 'mail-1',
  pid: 4242,
  version: '0.3.0',
  roles: ['api', 'worker'],
  startedAt: '2026-11-23T12:10:00.000Z',
  lastHeartbeatAt: '2026-11-23T13:09:58.000Z',
  heartbeatAgeSeconds: 2,
  staleAfterSeconds: 15,
  state: 'live',
  inFlight: 3,
  deliveredLastMinute: 120,
};

describe('the instances table', () => {
  it('lines up live and stale instances and sums them up', () => {
    const lines = formatInstances({
      data: [
        base,
        {
          ...base,
          id: 'dead00beef11cafe',
          host: 'w-2',
          pid: 9,
          roles: ['worker'],
          state: 'stale',
          heartbeatAgeSeconds: 42.7,
          inFlight: 0,
          deliveredLastMinute: 0,
        },
        { ...base, id: 'aa11bb22cc33dd44', roles: [], inFlight: null, deliveredLastMinute: null },
      ],
      meta: { at: '2026-11-23T13:10:00.000Z', liveInstances: 2, liveWorkers: 1 },
    });
    expect(lines).toEqual([
      'ID        STATE                ROLES       HOST:PID     VERSION  STARTED        HEARTBEAT  IN FLIGHT  DELIVERED 1 MIN',
      '3f9a0c1d  live                 api,worker  mail-1:4242  0.3.0    1 h 0 min ago  2 s ago    3          120',
      'dead00be  STALE (42 s silent)  worker      w-2:9        0.3.0    1 h 0 min ago  42 s ago   0          0',
      'aa11bb22  live                 -           mail-1:4242  0.3.0    1 h 0 min ago  2 s ago    -          -',
      '2 live instances, 1 worker, 1 stale.',
    ]);
  });

  it('says when nothing is known, and when no worker runs', () => {
    expect(formatInstances({ data: [], meta: { at: '2026-11-23T13:10:00.000Z', liveInstances: 0, liveWorkers: 0 } })).toEqual([
      'No instance has written a heartbeat in the last hour.',
      '0 live instances, no worker running.',
    ]);
    expect([formatSeconds(0.4), formatSeconds(59.9), formatSeconds(3_600), formatSeconds(90_000)]).toEqual([
      '0 s',
      '59 s',
      '1 h 0 min',
      '1 d 1 h',
    ]);
  });
});
