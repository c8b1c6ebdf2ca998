/**
 * Statistics that outlive the mails, from the outside: two applications submit over HTTP into a
 * real relay on loopback that accepts, refuses (5xx) and defers (4xx); an operator dequeues and suppresses; a hard
 * bounce and a complaint come back through the bounce service; the worker runs on a ManualClock, so every hour and
 * latency is known. GET /api/v1/stats must then count each application per hour exactly, one to one with the
 * application events, with the latency percentiles and the rates of the alert rules; answer the same once the mails
 * are purged; forget them only after 13 months; and never show one API key another application's figures.
 */
import {
  type ApplicationStatisticsResponse,
  MailStatus,
  type MailStatusCode,
  type Statistics,
  type StatisticsResponse,
  type SubmitMailRequest,
} from '@outbox/contract';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBounceService } from '../../src/bounces/bounce.service.js';
import { createRelayTransport, type RelayTransport } from '../../src/delivery/relay-transport.js';
import { createRetryPolicy } from '../../src/delivery/retry-policy.js';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/delivery/worker.js';
import { auth, createTestContext, loginAs, testEngine, type TestContext } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { arf, dsn } from '../bounces/bounce-support.js';

const HOUR = 3_600_000;
/** createTestContext's clock starts here (2026-11-23T10:00:00Z). */
const TEN = Date.parse('2026-11-23T10:00:00Z');
const DAY_RANGE = 'from=2026-11-23T00:00:00Z&to=2026-11-24T00:00:00Z';
const HOURS_RANGE = 'from=2026-11-23T10:00:00Z&to=2026-11-23T12:00:00Z';

let context: TestContext;
let relay: TestRelay;
let transport: RelayTransport;
let worker: DeliveryWorker | undefined;
let shopKey: string;
let newsKey: string;
let shopId: number;
let newsId: number;
let token: string;
const ids: Record<string, number> = {};

const mail = (to: string[], subject: string): SubmitMailRequest => ({
  fromMail: 'app@example.com',
  to: to.map((recipientMail) => ({ recipientName: '', recipientMail })),
  subject,
  text: 'Hello',
});

async function submit(key: string, name: string, to: string[]): Promise<void> {
  const response = await context.app.inject({
    method: 'POST',
    url: '/api/v1/mail',
    headers: auth(key),
    payload: JSON.stringify(mail(to, name)),
  });
  expect(response.statusCode, response.body).toBe(202);
  ids[name] = (response.json() as { data: Array<{ id: number }> }).data[0]!.id;
}

async function statusOf(id: number): Promise<number | undefined> {
  return (await context.store.db.selectFrom('mails').select('status').where('id', '=', id).executeTakeFirst())?.status;
}

async function waitForStatus(name: string, status: MailStatusCode): Promise<void> {
  await waitUntil(async () => (await statusOf(ids[name]!)) === status, { what: `mail ${name} in status ${status}` });
}

async function stats(
  key: string,
  query: string,
): Promise<{ status: number; body: Statistics & { error?: { code: string; message: string } } }> {
  const response = await context.app.inject({ method: 'GET', url: `/api/v1/stats?${query}`, headers: auth(key) });
  const body = response.json() as StatisticsResponse & { error?: { code: string; message: string } };
  return { status: response.statusCode, body: (body.data?.[0] ?? body) as Statistics & { error?: { code: string; message: string } } };
}

async function okStats(key: string, query: string): Promise<Statistics> {
  const answer = await stats(key, query);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

/** The eight counters of a bucket or of the totals. */
const countsOf = (b: Statistics['totals'] | Statistics['buckets'][number]) => ({
  accepted: b.accepted,
  sent: b.sent,
  deferred: b.deferred,
  failed: b.failed,
  bounced: b.bounced,
  complained: b.complained,
  suppressed: b.suppressed,
  dequeued: b.dequeued,
});
const counts = (partial: Partial<ReturnType<typeof countsOf>>) => ({
  accepted: 0,
  sent: 0,
  deferred: 0,
  failed: 0,
  bounced: 0,
  complained: 0,
  suppressed: 0,
  dequeued: 0,
  ...partial,
});

const SHOP_TEN = counts({ accepted: 8, sent: 3, deferred: 1, failed: 1, suppressed: 3, dequeued: 1 });
const SHOP_ELEVEN = counts({ sent: 1 });
const NEWS_TEN = counts({ accepted: 2, sent: 2 });
const NEWS_ELEVEN = counts({ bounced: 1, complained: 1 });
const add = (a: ReturnType<typeof counts>, b: ReturnType<typeof counts>) =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v + b[k as keyof typeof b]])) as ReturnType<typeof counts>;

beforeAll(async () => {
  context = await createTestContext();
  relay = await startTestRelay();
  shopKey = await context.services.auth.createApiKey('shop');
  newsKey = await context.services.auth.createApiKey('news');
  shopId = (await context.services.auth.findApiKeyPrincipal(shopKey))!.id;
  newsId = (await context.services.auth.findApiKeyPrincipal(newsKey))!.id;
  token = await loginAs(context);

  // Hour 10, before any worker runs.
  relay.rcptAnswer = (address) =>
    address === 'reject@example.net'
      ? { code: 550, message: '5.7.1 Rejected by policy' }
      : address === 'defer@example.net'
        ? { code: 451, message: '4.7.1 Try again later' }
        : { accept: true };
  await submit(shopKey, 'late', ['late@example.net']); // suppressed after acceptance: the attempt ends it
  const added = await context.app.inject({
    method: 'POST',
    url: '/api/v1/suppressions',
    headers: auth(token),
    payload: JSON.stringify({ address: 'blocked@example.net' }),
  });
  expect(added.statusCode, added.body).toBe(201);
  await submit(shopKey, 'ok1', ['ok1@example.net']);
  await submit(shopKey, 'ok2', ['ok2@example.net']);
  await submit(shopKey, 'rejected', ['reject@example.net']);
  await submit(shopKey, 'deferred', ['defer@example.net']);
  await submit(shopKey, 'blocked', ['blocked@example.net']); // every recipient suppressed: Error at once
  await submit(shopKey, 'partly', ['ok3@example.net', 'blocked@example.net']);
  await submit(shopKey, 'dequeued', ['later@example.net']);
  await submit(newsKey, 'bounced', ['news1@example.net']);
  await submit(newsKey, 'complained', ['news2@example.net']);
  const dequeue = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${ids.dequeued}/dequeue`, headers: auth(token) });
  expect(dequeue.statusCode, dequeue.body).toBe(200);
  const late = await context.app.inject({
    method: 'POST',
    url: '/api/v1/suppressions',
    headers: auth(token),
    payload: JSON.stringify({ address: 'late@example.net' }),
  });
  expect(late.statusCode, late.body).toBe(201);

  // Three seconds later the worker sends: every latency of hour 10 is 3 s.
  context.clock.set(TEN + 3_000);
  transport = createRelayTransport(relay.url, { connectionTimeoutMs: 15_000, socketTimeoutMs: 15_000 });
  worker = createDeliveryWorker({
    store: context.store,
    clock: context.clock,
    transport,
    retryPolicy: createRetryPolicy({ maxAttempts: 3, baseDelayMs: 60_000, jitter: 0, maxAgeMs: 24 * HOUR }),
    concurrency: 4,
    leaseMs: 10 * 60_000,
    pollIntervalMs: 20,
    flushDelayMs: 1,
  });
  worker.start();
  for (const name of ['ok1', 'ok2', 'partly', 'bounced', 'complained']) await waitForStatus(name, MailStatus.ProviderSent);
  await waitForStatus('rejected', MailStatus.ProviderError);
  await waitForStatus('late', MailStatus.Error);
  await waitUntil(
    async () =>
      (await context.store.db.selectFrom('mails').select('attempts').where('id', '=', ids.deferred!).executeTakeFirst())?.attempts === 1 &&
      (await statusOf(ids.deferred!)) === MailStatus.Queued,
    { what: 'the deferred mail back in the queue after its first attempt' },
  );

  // Hour 11: the deferred mail goes (latency 1 h), a hard bounce and a complaint come back.
  relay.rcptAnswer = () => ({ accept: true });
  context.clock.set(TEN + HOUR);
  await waitForStatus('deferred', MailStatus.ProviderSent);
  const bounces = createBounceService({ store: context.store, clock: context.clock, bounceDomain: 'bounce.test' });
  const codec = (await bounces.returnPaths())!;
  const bouncePath = codec.addressOf(ids.bounced!, 0);
  const bounce = await bounces.receiveReport({
    envelopeFrom: '',
    envelopeTo: [bouncePath],
    raw: Buffer.from(
      dsn({
        returnPath: bouncePath,
        recipients: [{ address: 'news1@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 No such user' }],
      }),
    ),
  });
  expect(bounce.mailId).toBe(ids.bounced);
  const complaintPath = codec.addressOf(ids.complained!, 0);
  const complaint = await bounces.receiveReport({
    envelopeFrom: '',
    envelopeTo: [complaintPath],
    raw: Buffer.from(arf({ returnPath: complaintPath, recipient: 'news2@example.net' })),
  });
  expect(complaint.mailId).toBe(ids.complained);
  await worker.stop({ graceMs: 0 });
  worker = undefined;
  token = await loginAs(context); // the first session ran out with the hour
}, 120_000);

afterAll(async () => {
  await worker?.stop({ graceMs: 0 });
  await transport?.close();
  await relay?.close();
  await context?.close();
});

describe(`hourly statistics per application (${testEngine})`, () => {
  it('counts each application per hour: accepted, sent, deferred, failed, bounced, complained, suppressed, dequeued', async () => {
    const shop = await okStats(shopKey, HOURS_RANGE);
    expect(shop.application).toEqual({ id: shopId, name: 'shop' });
    expect(shop.bucket).toBe('hour');
    expect(shop.buckets.map((b) => b.start)).toEqual(['2026-11-23T10:00:00.000Z', '2026-11-23T11:00:00.000Z']);
    expect(shop.buckets.map(countsOf)).toEqual([SHOP_TEN, SHOP_ELEVEN]);
    expect(countsOf(shop.totals)).toEqual(add(SHOP_TEN, SHOP_ELEVEN));

    const news = await okStats(newsKey, HOURS_RANGE);
    expect(news.application).toEqual({ id: newsId, name: 'news' });
    expect(news.buckets.map(countsOf)).toEqual([NEWS_TEN, NEWS_ELEVEN]);

    const all = await okStats(token, HOURS_RANGE);
    expect(all.application).toBeNull();
    expect(all.buckets.map(countsOf)).toEqual([add(SHOP_TEN, NEWS_TEN), add(SHOP_ELEVEN, NEWS_ELEVEN)]);
    expect((await okStats(token, `${HOURS_RANGE}&application=${newsId}`)).buckets.map(countsOf)).toEqual([NEWS_TEN, NEWS_ELEVEN]);
    // No mail here was submitted without an API key.
    const none = await okStats(token, `${HOURS_RANGE}&application=none`);
    expect(none.application).toEqual({ id: null, name: null });
    expect(countsOf(none.totals)).toEqual(counts({}));
  });

  it('matches the application events one to one (accepted: every stored submission)', async () => {
    const rows = await context.store.db
      .selectFrom('application_events')
      .select(['api_key_id', 'type', (eb) => eb.fn.countAll<number | string>().as('n')])
      .groupBy(['api_key_id', 'type'])
      .execute();
    const events = (key: number, type: string) => Number(rows.find((r) => Number(r.api_key_id) === key && r.type === type)?.n ?? 0);
    for (const [key, totals] of [
      [shopId, add(SHOP_TEN, SHOP_ELEVEN)],
      [newsId, add(NEWS_TEN, NEWS_ELEVEN)],
    ] as const) {
      const { accepted: _accepted, ...counted } = totals;
      expect({
        sent: events(key, 'mail.sent'),
        deferred: events(key, 'mail.deferred'),
        failed: events(key, 'mail.failed'),
        bounced: events(key, 'mail.bounced'),
        complained: events(key, 'mail.complained'),
        suppressed: events(key, 'mail.suppressed'),
        dequeued: events(key, 'mail.dequeued'),
      }).toEqual(counted);
    }
    // Accepted: mail.queued, and the one mail stored Error at once whose only event is mail.suppressed.
    expect(events(shopId, 'mail.queued') + 1).toBe(SHOP_TEN.accepted);
  });

  it('reads latency percentiles from the histogram, per bucket and over the range', async () => {
    const shop = await okStats(shopKey, HOURS_RANGE);
    // Hour 10: three mails sent 3 s after acceptance, in the (2.5 s, 5 s] bucket, read linearly within it.
    expect(shop.buckets[0]!.latency).toEqual({ count: 3, p50Ms: 3750, p95Ms: 4875 });
    // Hour 11: the deferred mail, sent an hour after acceptance: the (30 min, 1 h] bucket.
    expect(shop.buckets[1]!.latency).toEqual({ count: 1, p50Ms: 2_700_000, p95Ms: 3_510_000 });
    expect(shop.totals.latency).toEqual({ count: 4, p50Ms: 4167, p95Ms: 3_240_000 });
    const histogram = shop.totals.latencyHistogram;
    expect(histogram).toHaveLength(20);
    expect(histogram.filter((b) => b.count > 0)).toEqual([
      { upToMs: 5_000, count: 3 },
      { upToMs: 3_600_000, count: 1 },
    ]);
    expect(histogram.at(-1)).toEqual({ upToMs: null, count: 0 });
    // Nothing sent: no percentile.
    expect((await okStats(newsKey, HOURS_RANGE)).buckets[1]!.latency).toEqual({ count: 0, p50Ms: null, p95Ms: null });
  });

  it('computes the rates as the alert rules do', async () => {
    const shop = await okStats(shopKey, `${DAY_RANGE}&bucket=day`);
    expect(shop.buckets).toHaveLength(1);
    expect(shop.buckets[0]!.start).toBe('2026-11-23T00:00:00.000Z');
    expect(countsOf(shop.buckets[0]!)).toEqual(add(SHOP_TEN, SHOP_ELEVEN));
    // failed / (failed + sent), (bounced + complained) / sent, complained / sent.
    expect(shop.totals.rates).toEqual({ failure: 1 / 5, bounce: 0, complaint: 0 });
    const news = await okStats(newsKey, `${DAY_RANGE}&bucket=day`);
    expect(news.totals.rates).toEqual({ failure: 0, bounce: 1, complaint: 0.5 });
    expect(news.buckets[0]!.rates).toEqual({ failure: 0, bounce: 1, complaint: 0.5 });
    // A range with nothing sent has no rate.
    const empty = await okStats(newsKey, 'from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&bucket=day');
    expect(empty.totals.rates).toEqual({ failure: null, bounce: null, complaint: null });
  });

  it('an API key reads only its own application: another one, or none, is 404 as an unknown one is', async () => {
    const other = await stats(shopKey, `${HOURS_RANGE}&application=${newsId}`);
    expect(other.status).toBe(404);
    expect(other.body.error!.code).toBe('application_not_found');
    expect((await stats(shopKey, `${HOURS_RANGE}&application=none`)).status).toBe(404);
    expect((await stats(shopKey, `${HOURS_RANGE}&application=987654`)).status).toBe(404);
    expect((await okStats(shopKey, `${HOURS_RANGE}&application=${shopId}`)).totals.accepted).toBe(SHOP_TEN.accepted);
    // Operators: an application that does not exist is 404 too.
    expect((await stats(token, `${HOURS_RANGE}&application=987654`)).status).toBe(404);
    const anonymous = await context.app.inject({ method: 'GET', url: `/api/v1/stats?${HOURS_RANGE}` });
    expect(anonymous.statusCode).toBe(401);
    expect((await stats('not-a-key', HOURS_RANGE)).status).toBe(401);
  });

  it("answers every application's totals in one call, each as its own read answers them (operators only)", async () => {
    const perApplication = (key: string, query: string) =>
      context.app.inject({ method: 'GET', url: `/api/v1/stats/applications?${query}`, headers: auth(key) });
    const response = await perApplication(token, HOURS_RANGE);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json() as ApplicationStatisticsResponse;
    expect(body.meta).toEqual({ from: '2026-11-23T10:00:00.000Z', to: '2026-11-23T12:00:00.000Z' });
    // Most accepted first; no mail here was submitted without a key, so no item for `none`.
    expect(body.data.map((item) => item.application)).toEqual([
      { id: shopId, name: 'shop' },
      { id: newsId, name: 'news' },
    ]);
    for (const [id, key] of [
      [shopId, shopKey],
      [newsId, newsKey],
    ] as const) {
      const item = body.data.find((d) => d.application.id === id)!;
      expect(item.totals).toEqual((await okStats(key, HOURS_RANGE)).totals);
    }
    expect(countsOf(body.data[0]!.totals)).toEqual(add(SHOP_TEN, SHOP_ELEVEN));
    // A range with nothing counted: no item.
    const empty = await perApplication(token, 'from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z');
    expect((empty.json() as ApplicationStatisticsResponse).data).toEqual([]);
    // An API key reads its own figures through GET /api/v1/stats, never every application's.
    const asKey = await perApplication(shopKey, HOURS_RANGE);
    expect(asKey.statusCode).toBe(403);
    expect((asKey.json() as { error: { code: string } }).error.code).toBe('operator_only');
    const backwards = await perApplication(token, 'from=2026-11-24T00:00:00Z&to=2026-11-23T00:00:00Z');
    expect(backwards.statusCode).toBe(400);
    expect((backwards.json() as { error: { message: string } }).error.message).toContain('query.to');
    expect((await perApplication(token, `${HOURS_RANGE}&bucket=day`)).statusCode).toBe(400);
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const cases: Array<[string, string]> = [
      ['to=2026-11-24T00:00:00Z', 'from'],
      ['from=2026-11-23T00:00:00Z', 'to'],
      ['from=yesterday&to=2026-11-24T00:00:00Z', 'query.from'],
      ['from=2026-11-23T00:00:00Z&to=2026-11-23T00:00:00Z', 'query.to'],
      ['from=2026-11-24T00:00:00Z&to=2026-11-23T00:00:00Z', 'query.to'],
      ['from=2025-01-01T00:00:00Z&to=2026-11-23T00:00:00Z', 'query.to'],
      [`${DAY_RANGE}&bucket=week`, 'query.bucket'],
      [`${DAY_RANGE}&application=shop`, 'query.application'],
      [`${DAY_RANGE}&application=0`, 'query.application'],
      [`${DAY_RANGE}&limit=5`, 'limit'],
    ];
    for (const [query, field] of cases) {
      const answer = await stats(token, query);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error!.message, query).toContain(field);
    }
    expect((await stats(token, 'from=2026-11-24T00:00:00Z&to=2026-11-23T00:00:00Z')).body.error!.code).toBe('invalid_date_range');
    // 400 days is the limit, and allowed.
    expect((await stats(token, 'from=2025-10-19T00:00:00Z&to=2026-11-23T00:00:00Z&bucket=day')).status).toBe(200);
  });

  it('answers 200, 400 or 404 to any query, never a server error', async () => {
    const instant = fc.oneof(
      fc
        .date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true })
        .map((d) => d.toISOString()),
      fc.constantFrom('2026-11-23T10:00:00Z', '2026-12-31T23:59:60Z', '2026-02-30T00:00:00Z', '2026-11-23', '1e400', '', '-1'),
      fc.string(),
    );
    const value = fc.oneof(instant, fc.constantFrom('hour', 'day', 'none', String(shopId), '0', '-1', '99999999999999999999'), fc.string());
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom('from', 'to', 'bucket', 'application'), value, { maxKeys: 4 }),
        fc.constantFrom(token, shopKey),
        async (query, key) => {
          const answer = await stats(key, new URLSearchParams(query).toString());
          return [200, 400, 404].includes(answer.status);
        },
      ),
      { numRuns: 150, seed: 20261123 },
    );
  });

  it('answers for a day whose mails were purged, and forgets it only after 13 months', async () => {
    const before = await okStats(token, HOURS_RANGE);
    context.clock.set(TEN + 3 * 24 * HOUR);
    const purged = await context.services.mails.purgeFinishedMails(1, 'retention');
    expect(purged).toBe(10); // every mail: all finished
    expect(await context.store.db.selectFrom('mails').select('id').execute()).toEqual([]);
    token = await loginAs(context);
    const detail = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${ids.ok1}`, headers: auth(token) });
    expect(detail.statusCode).toBe(404);
    expect(await okStats(token, HOURS_RANGE)).toEqual(before);
    expect((await okStats(shopKey, HOURS_RANGE)).buckets.map(countsOf)).toEqual([SHOP_TEN, SHOP_ELEVEN]);

    // 13 months less a day later the day is still kept; a day more and the hourly purge removes it.
    context.clock.set(Date.parse('2027-12-22T10:00:00Z'));
    expect(await context.services.statistics.purgeStatistics()).toBe(0);
    token = await loginAs(context);
    expect(await okStats(token, HOURS_RANGE)).toEqual(before);
    context.clock.set(Date.parse('2027-12-24T10:00:00Z'));
    expect(await context.services.statistics.purgeStatistics()).toBeGreaterThan(0);
    token = await loginAs(context);
    expect(countsOf((await okStats(token, HOURS_RANGE)).totals)).toEqual(counts({}));
  });
});
