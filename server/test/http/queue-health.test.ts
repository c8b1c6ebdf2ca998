/** GET /api/v1/queue/health on a real store, through the HTTP API. */
import { MailStatus, type QueueHealth } from '@outbox/contract';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHeartbeat } from '../../src/instances/heartbeat.js';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';

describe('GET /api/v1/queue/health', () => {
  let context: TestContext;
  let token: string;
  // One app for the file, its store emptied after each test (TestContext.reset).
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());
  beforeEach(async () => {
    token = await loginAs(context);
  });
  afterEach(() => context.reset());

  const health = async (): Promise<QueueHealth> => {
    const response = await context.app.inject({ method: 'GET', url: '/api/v1/queue/health', headers: auth(token) });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { data: QueueHealth[] }).data[0]!;
  };

  it('on an empty store: nothing queued, no rate, no worker seen', async () => {
    expect(await health()).toEqual({
      at: '2026-11-23T10:00:00.000Z',
      queued: 0,
      dueNow: 0,
      oldestQueuedAt: null,
      oldestQueuedAgeSeconds: null,
      inFlight: 0,
      deliveredLastMinute: 0,
      deliveredLastHour: 0,
      failedLastHour: 0,
      failureRateLastHour: null,
      lastWorkerActivityAt: null,
      hasLiveWorker: false,
      workerActiveLastMinute: false,
      liveWorkers: 0,
      relaysDown: [],
    });
  });

  it('counts due and waiting Queued mails, in flight, delivered and failed in their windows, and the last worker activity', async () => {
    const now = context.clock.now();
    const at = (msAgo: number) => now - msAgo;
    const ids = await seedMails(context.store, [
      { status: MailStatus.Queued, receivedAt: at(3_600_000) },
      { status: MailStatus.Queued, receivedAt: at(600_000) },
      // Waiting for a retry: seeded mails are due a year from now.
      { status: MailStatus.Queued, receivedAt: at(60_000) },
      { status: MailStatus.Processing, receivedAt: at(30_000) },
      { status: MailStatus.ProviderSent, receivedAt: at(40_000), providerSentAt: at(40_000) },
      { status: MailStatus.ProviderSent, receivedAt: at(50_000), providerSentAt: at(50_000) },
      { status: MailStatus.ProviderSent, receivedAt: at(1_800_000), providerSentAt: at(1_800_000) },
      { status: MailStatus.ProviderSent, receivedAt: at(7_200_000), providerSentAt: at(7_200_000) },
      { status: MailStatus.ProviderError, receivedAt: at(600_000) },
      { status: MailStatus.Error, receivedAt: at(3 * 3_600_000) },
      // Dequeued by an operator a moment ago: not worker activity.
      { status: MailStatus.Dequeued, receivedAt: at(1_000) },
    ]);
    await context.store.db
      .updateTable('mail_queue')
      .set({ due_at: at(1_000) })
      .where('mail_id', 'in', [ids[0]!, ids[1]!])
      .execute();

    expect(await health()).toEqual({
      at: '2026-11-23T10:00:00.000Z',
      queued: 3,
      dueNow: 2,
      oldestQueuedAt: '2026-11-23T09:00:00.000Z',
      oldestQueuedAgeSeconds: 3600,
      inFlight: 1,
      deliveredLastMinute: 2,
      deliveredLastHour: 3,
      failedLastHour: 1,
      failureRateLastHour: 0.25,
      lastWorkerActivityAt: '2026-11-23T09:59:30.000Z',
      // A claim 30 s ago is activity, not a running worker: no worker heartbeat exists.
      hasLiveWorker: false,
      workerActiveLastMinute: false,
      liveWorkers: 0,
      relaysDown: [],
    });

    // A worker's heartbeat, even an idle one's, is what says a worker runs.
    const worker = createHeartbeat({ store: context.store, clock: context.clock, roles: ['worker'], version: 'test' });
    await worker.beat();
    expect(await health()).toMatchObject({ hasLiveWorker: true, workerActiveLastMinute: true, liveWorkers: 1 });

    // Two minutes on, nothing moved and the worker went silent: mails are due and no worker runs.
    context.clock.advance(120_000);
    const later = await health();
    expect(later).toMatchObject({
      dueNow: 2,
      deliveredLastMinute: 0,
      deliveredLastHour: 3,
      hasLiveWorker: false,
      workerActiveLastMinute: false,
      liveWorkers: 0,
    });
    expect(later.lastWorkerActivityAt).toBe('2026-11-23T09:59:30.000Z');
    expect(later.oldestQueuedAgeSeconds).toBe(3720);
  });

  it('refuses unknown query parameters and callers without an operator token', async () => {
    const unknown = await context.app.inject({ method: 'GET', url: '/api/v1/queue/health?verbose=1', headers: auth(token) });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('query.verbose') } });
    const anonymous = await context.app.inject({ method: 'GET', url: '/api/v1/queue/health' });
    expect(anonymous.statusCode).toBe(401);
  });
});
