/**
 * Heartbeats and GET /api/v1/instances on a real store (both engines), driven by the manual clock: rows appear,
 * refresh, turn stale, are forgotten after an hour and vanish at a graceful stop; queue health and /metrics count
 * live workers from them; a store that fails a write is logged and written again at the next tick.
 */
import os from 'node:os';
import { sql } from 'kysely';
import type { InstancesResponse, QueueHealth } from '@outbox/contract';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDeliveryWindow, createHeartbeat } from '../../src/instances/heartbeat.js';
import type { Logger } from '../../src/logger.js';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';
import { waitUntil } from '../support/net.js';

let context: TestContext;
let token: string;

beforeAll(async () => {
  // The clock moves an hour and more here: the session must outlast it.
  context = await createTestContext({ sessionTtlSeconds: 30 * 86_400 });
  token = await loginAs(context);
});
afterAll(() => context.close());
beforeEach(async () => {
  await context.store.db.deleteFrom('instances').execute();
});

async function instances(): Promise<InstancesResponse> {
  const response = await context.app.inject({ method: 'GET', url: '/api/v1/instances', headers: auth(token) });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as InstancesResponse;
}

async function queueHealth(): Promise<QueueHealth> {
  const response = await context.app.inject({ method: 'GET', url: '/api/v1/queue/health', headers: auth(token) });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { data: QueueHealth[] }).data[0]!;
}

async function metrics(): Promise<string> {
  return (await context.app.inject({ method: 'GET', url: '/metrics' })).body;
}

function heartbeatOf(roles: Parameters<typeof createHeartbeat>[0]['roles'], extra: Partial<Parameters<typeof createHeartbeat>[0]> = {}) {
  return createHeartbeat({ store: context.store, clock: context.clock, roles, version: '9.8.7', ...extra });
}

describe('instances and their heartbeats', () => {
  it('a heartbeat appears with its identity and load, refreshes every beat, and vanishes at a graceful stop', async () => {
    let load = { inFlight: 4, deliveredTotal: 10 };
    const heartbeat = heartbeatOf(['api', 'worker', 'smtp'], { workerLoad: () => load });
    expect(await heartbeat.beat()).toBe(true);
    const first = await instances();
    expect(first.meta).toEqual({ at: new Date(context.clock.now()).toISOString(), liveInstances: 1, liveWorkers: 1 });
    expect(first.data).toEqual([
      {
        id: heartbeat.id,
        host: os.hostname(),
        pid: process.pid,
        version: '9.8.7',
        roles: ['api', 'worker', 'smtp'],
        startedAt: new Date(heartbeat.startedAt).toISOString(),
        lastHeartbeatAt: new Date(context.clock.now()).toISOString(),
        heartbeatAgeSeconds: 0,
        staleAfterSeconds: 15,
        state: 'live',
        inFlight: 4,
        deliveredLastMinute: 10,
      },
    ]);
    expect(heartbeat.id).toMatch(/^[0-9a-f]{16}$/);

    context.clock.advance(5_000);
    load = { inFlight: 1, deliveredTotal: 25 };
    await heartbeat.beat();
    const second = await instances();
    expect(second.data).toHaveLength(1);
    expect(second.data[0]).toMatchObject({
      lastHeartbeatAt: new Date(context.clock.now()).toISOString(),
      startedAt: new Date(heartbeat.startedAt).toISOString(),
      inFlight: 1,
      deliveredLastMinute: 25,
    });

    await heartbeat.stop();
    expect((await instances()).data).toEqual([]);
    // A stopped heartbeat writes no more, even when asked.
    expect(await heartbeat.beat()).toBe(false);
    expect((await instances()).data).toEqual([]);
  });

  it('a silent instance is stale after 15 s, and queue health and /metrics count only live workers', async () => {
    const worker = heartbeatOf(['worker']);
    const api = heartbeatOf(['api', 'smtp']);
    await worker.beat();
    await api.beat();
    expect((await queueHealth()).liveWorkers).toBe(1);
    expect(await metrics()).toContain('outbox_live_workers 1');

    // 15 s on the dot is still live; a millisecond more and the worker, silent since, is stale. The API
    // instance beats on.
    context.clock.advance(10_000);
    await api.beat();
    context.clock.advance(5_000);
    expect((await instances()).data.find((i) => i.id === worker.id)?.state).toBe('live');
    context.clock.advance(1);
    const listed = await instances();
    expect(listed.meta).toMatchObject({ liveInstances: 1, liveWorkers: 0 });
    expect(listed.data.map((i) => [i.id, i.state])).toEqual([
      [api.id, 'live'],
      [worker.id, 'stale'],
    ]);
    expect(listed.data[1]!.heartbeatAgeSeconds).toBeCloseTo(15.001, 3);
    const health = await queueHealth();
    expect(health).toMatchObject({ liveWorkers: 0, workerActiveLastMinute: false });
    const text = await metrics();
    expect(text).toContain('outbox_live_workers 0');
    expect(text).toContain('outbox_instances{state="live"} 1');
    expect(text).toContain('outbox_instances{state="stale"} 1');

    // Beating again, it is live again (a paused process that wakes up).
    await worker.beat();
    expect((await queueHealth()).liveWorkers).toBe(1);
  });

  it('the writer decides when it is stale (INSTANCE_STALE_AFTER), and a stale row is forgotten an hour after its last beat', async () => {
    const quick = heartbeatOf(['worker'], { intervalMs: 100, staleAfterMs: 300 });
    const other = heartbeatOf(['api']);
    await quick.beat();
    await other.beat();
    context.clock.advance(301);
    expect((await instances()).data.find((i) => i.id === quick.id)).toMatchObject({ state: 'stale', staleAfterSeconds: 0.3 });

    context.clock.advance(3_600_000 - 301);
    await other.beat();
    expect((await instances()).data.map((i) => i.id)).toEqual([other.id, quick.id]);
    context.clock.advance(1);
    await other.beat();
    expect((await instances()).data.map((i) => i.id)).toEqual([other.id]);
  });

  it('a write the store refuses is logged (once, then once a minute), never thrown, and the next tick writes again', async () => {
    const warnings: object[] = [];
    const infos: object[] = [];
    const logger: Pick<Logger, 'info' | 'warn'> = { warn: (object) => warnings.push(object), info: (object) => infos.push(object) };
    const ticking = heartbeatOf(['worker'], { intervalMs: 20, logger });
    const quietWarnings: object[] = [];
    const manual = heartbeatOf(['api'], { logger: { warn: (object) => quietWarnings.push(object), info: () => {} } });
    // The store "goes away" for the heartbeat: its table is not there, so every write fails on either engine.
    await sql`alter table instances rename to instances_away`.execute(context.store.db);
    try {
      await ticking.start();
      await waitUntil(() => warnings.length >= 1, { what: 'the failed heartbeat logged', timeoutMs: 10_000 });
      // 13 failed beats at 5 s: the 1st and the 12th (a minute in) are logged.
      for (let beat = 0; beat < 13; beat += 1) expect(await manual.beat()).toBe(false);
      expect(quietWarnings.map((w) => (w as { failedBeats: number }).failedBeats)).toEqual([1, 12]);
    } finally {
      await sql`alter table instances_away rename to instances`.execute(context.store.db);
    }
    await waitUntil(async () => (await instances()).data.some((i) => i.id === ticking.id), {
      what: 'the heartbeat written at a later tick',
      timeoutMs: 10_000,
    });
    expect(warnings[0]).toMatchObject({ instanceId: ticking.id, failedBeats: 1 });
    expect(infos[0]).toMatchObject({ instanceId: ticking.id, failedBeats: expect.any(Number) });
    await ticking.stop();
    await manual.stop();
    expect((await instances()).data).toEqual([]);
  });

  it('is for operators only and takes no query parameters', async () => {
    expect((await context.app.inject({ method: 'GET', url: '/api/v1/instances' })).statusCode).toBe(401);
    const unknown = await context.app.inject({ method: 'GET', url: '/api/v1/instances?all=1', headers: auth(token) });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('query.all') } });
    const openapi = (await context.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).toContain('/api/v1/instances');
  });
});

describe('delivered in the last minute, from a growing total sampled every tick', () => {
  it('counts from 0 in the first minute, then the last 60 s, interpolated between the samples around the edge', () => {
    const window = createDeliveryWindow(0);
    expect(window.sample(5_000, 10)).toBe(10);
    expect(window.sample(60_000, 120)).toBe(120);
    // At 65 s the edge is 5 s, exactly the first sample: 130 - 10.
    expect(window.sample(65_000, 130)).toBe(120);
    // At 67.5 s the edge (7.5 s) lies halfway between 5 s (10) and 60 s (120): 10 + 110 × 2.5/55 = 15.
    expect(window.sample(67_500, 130)).toBe(115);
    // Nothing delivered for two minutes: 0.
    expect(window.sample(200_000, 130)).toBe(0);
  });
});
