/**
 * Relay health and throttling from the outside (docs/relays.md#health): Outbox as `npm start`
 * wires it (main.ts, in this process), real SMTP peers on loopback as relays, everything read through the HTTP API and
 * `/metrics` of the instance under test.
 * - A relay answering `454 4.7.0 Throttling failure: Maximum sending rate exceeded` past 5 mails a second: every mail
 *   arrives, none Failed with a retry budget of one attempt (so no throttle spent one), none faster than the relay
 *   allows; `GET /api/v1/relays/health` shows it `throttled`, then `up` once its rate has climbed back.
 * - Two instances on one store, an API-only one and a worker: the worker's relay stopped is `down` on the API-only
 *   instance within 5 s, in its queue health's `relaysDown`, in its `/metrics`, and the relay_down alert fires; started
 *   again it is `up` and the alert resolved; the worker stopped, its reports go with it.
 * - The fold, and the reports of a stale instance skipped (a ManualClock past its heartbeat).
 */
import type { MailDetail, QueueHealth, RelayHealth } from '@outbox/contract';
import { MailStatus } from '@outbox/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { createAlertEvaluator } from '../../src/alerts/alert-evaluator.js';
import { DEFAULT_ALERT_SETTINGS } from '../../src/alerts/alert-rules.js';
import { loadConfig } from '../../src/config.js';
import { foldRelayHealth, type InstanceRelayReport } from '../../src/relays/relay-health.js';
import { writeInstanceReports } from '../../src/relays/relay-health.repository.js';
import { createRelayHealthService } from '../../src/relays/relay-health.service.js';
import { upsertHeartbeat } from '../../src/instances/instance.repository.js';
import { createTestContext, type TestContext } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { busiestSecond, createRelayFixture } from '../support/relay-fixture.js';
import type { TestRelay } from '../support/test-relay.js';

type Running = Awaited<ReturnType<typeof startInProcess>>;

// First, so that its peers close after the instances below that send to them have stopped.
const fixture = createRelayFixture();
const environments: OutboxEnvironment[] = [];
const instances: Running[] = [];
let context: TestContext | undefined;

afterEach(async () => {
  for (const running of instances.splice(0).reverse()) await running.stop();
  for (const environment of environments.splice(0)) await environment.dispose();
  await context?.close();
  context = undefined;
});

async function start(env: Record<string, string>): Promise<Running> {
  const running = await startInProcess(env);
  instances.push(running);
  return running;
}

async function login(running: Running): Promise<Record<string, string>> {
  const response = await running.app.inject({
    method: 'POST',
    url: '/api/v1/login',
    payload: { username: 'ops', password: 'correct horse battery' },
  });
  expect(response.statusCode, response.body).toBe(200);
  return { authorization: `Token ${(response.json() as { data: Array<{ token: string }> }).data[0]!.token}` };
}

async function get<T>(running: Running, url: string, headers: Record<string, string>): Promise<T[]> {
  const response = await running.app.inject({ method: 'GET', url, headers });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { data: T[] }).data;
}

const health = (running: Running, headers: Record<string, string>) => get<RelayHealth>(running, '/api/v1/relays/health', headers);
const relayOf = async (running: Running, headers: Record<string, string>, name: string) =>
  (await health(running, headers)).find((relay) => relay.relay === name)!;

async function submit(running: Running, key: string, count: number, subject: string): Promise<number[]> {
  const response = await running.app.inject({
    method: 'POST',
    url: '/api/v1/mail',
    headers: { authorization: `Token ${key}` },
    payload: Array.from({ length: count }, (_, i) => ({
      fromMail: 'shop@example.com',
      to: [{ recipientMail: `user${i}@example.net` }],
      subject: `${subject} ${i}`,
      text: 'Hello',
    })),
  });
  expect(response.statusCode, response.body).toBe(202);
  return (response.json() as { data: Array<{ id: number }> }).data.map((mail) => mail.id);
}

async function counts(running: Running, headers: Record<string, string>): Promise<Record<string, number>> {
  const response = await running.app.inject({ method: 'GET', url: '/api/v1/mail/list?limit=1', headers });
  return (response.json() as { meta: { counts: Record<string, number> } }).meta.counts;
}

/** Submits one mail every half second until `peer` has received one: a route or a probe takes effect within seconds. */
async function submitUntilReceived(running: Running, key: string, peer: TestRelay, subject: string, timeoutMs: number, what: string) {
  await waitUntil(
    async () => {
      if (peer.received.length > 0) return true;
      await submit(running, key, 1, subject);
      return false;
    },
    { timeoutMs, intervalMs: 500, what },
  );
}

async function relaysDown(running: Running, headers: Record<string, string>): Promise<string[] | undefined> {
  return (await get<QueueHealth>(running, '/api/v1/queue/health', headers))[0]!.relaysDown;
}

async function metrics(running: Running): Promise<string> {
  return (await running.app.inject({ method: 'GET', url: '/metrics' })).body;
}

describe('a throttling relay', () => {
  it('slows the relay instead of failing mails: every mail arrives within its one attempt, at the relay’s rate; throttled, then up', async () => {
    const { relay, acceptedAt } = await fixture.startThrottlingPeer(5);
    const environment = await freshEnvironment({
      RELAY_URL: relay.url,
      // One attempt: a throttle that spent the budget would end its mail in ProviderError.
      RETRY_MAX_ATTEMPTS: '1',
      WORKER_CONCURRENCY: '10',
      // Figures every second, so the recovery is seen soon after it happens.
      HEARTBEAT_INTERVAL: '1s',
      INSTANCE_STALE_AFTER: '3s',
    });
    environments.push(environment);
    const running = await start(environment.env);
    const headers = await login(running);
    const key = await running.services.auth.createApiKey('shop');
    // The worker's first report follows its first heartbeat.
    await waitUntil(async () => (await relayOf(running, headers, 'default')).workers === 1, {
      timeoutMs: 10_000,
      what: 'the first report',
    });
    expect(await relayOf(running, headers, 'default')).toMatchObject({ state: 'idle', since: null, sentToday: 0 });

    const ids = await submit(running, key, 20, 'flood');
    const seen = new Set<string>();
    await waitUntil(
      async () => {
        seen.add((await relayOf(running, headers, 'default')).state);
        return (await counts(running, headers))[String(MailStatus.ProviderSent)] === 20;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: 'every mail to be ProviderSent' },
    );
    const final = await counts(running, headers);
    expect(final[String(MailStatus.ProviderError)] ?? 0).toBe(0);
    expect(final[String(MailStatus.Error)] ?? 0).toBe(0);
    expect(relay.received).toHaveLength(20);
    expect(busiestSecond(acceptedAt)).toBeLessThanOrEqual(5);
    expect(relay.attempts).toBeGreaterThan(20);
    expect(seen.has('throttled')).toBe(true);

    const details = await Promise.all(ids.map((id) => get<MailDetail>(running, `/api/v1/mail/${id}`, headers).then((d) => d[0]!)));
    expect(details.every((detail) => detail.attempts === 1)).toBe(true);
    const throttledSends = details.map((detail) => Number(detail.events.find((e) => e.type === 'sent')?.detail?.throttled ?? 0));
    expect(throttledSends.reduce((sum, n) => sum + n, 0)).toBe(relay.attempts - 20);
    // No routes: the events name no relay, as before routes.
    expect(details.every((detail) => detail.events.find((e) => e.type === 'sent')?.detail?.relay === undefined)).toBe(true);

    const during = await relayOf(running, headers, 'default');
    if (during.state === 'throttled') {
      expect(during.ratePerSecond).toBeGreaterThan(0);
      expect(during.lastError).toMatch(/^454 4\.7\.0 Throttling failure/);
    }
    // Its rate climbs back a tenth of the way each second; then it is up again, unpaced.
    await waitUntil(async () => (await relayOf(running, headers, 'default')).state === 'up', {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'the relay to be up again',
    });
    expect(await relayOf(running, headers, 'default')).toMatchObject({
      state: 'up',
      ratePerSecond: null,
      maxPerSecond: null,
      sentToday: 20,
      maxPerDay: null,
      quotaUsed: null,
      lastError: expect.stringMatching(/^454 4\.7\.0 Throttling failure/),
      workers: 1,
    });
    const scraped = await metrics(running);
    expect(scraped).toContain('outbox_relay_state{relay="default",state="up"} 1');
    expect(scraped).toContain('outbox_relay_state{relay="default",state="throttled"} 0');
    expect(scraped).toContain('outbox_relay_sent_today{relay="default"} 20');
    expect(scraped).toMatch(/outbox_relay_latency_seconds\{relay="default"\} \d/);
  }, 120_000);
});

describe('a relay that stops', () => {
  it('is down on every instance within 5 s, named by queue health, alerted; up and resolved once back; gone with its worker', async () => {
    const fallback = await fixture.startPeer();
    const primary = await fixture.startPeer();
    const primaryPort = primary.port;
    // A: the API alone; B: the worker, on the same store. A answers from what B wrote.
    const environment = await freshEnvironment({
      RELAY_URL: fallback.url,
      ALERT_EVALUATION_INTERVAL: '250ms',
      ALERT_RELAY_DOWN_FOR: '1s',
      ALERT_COOLDOWN: '0',
    });
    environments.push(environment);
    const api = await start({ ...environment.env, WORKER: 'off' });
    const worker = await start({ ...environment.env, ALERTS: 'off' });
    const headers = await login(api);
    await api.app.inject({
      method: 'POST',
      url: '/api/v1/relays',
      headers,
      payload: { name: 'primary', url: primary.url, tls: 'opportunistic' },
    });
    await api.app.inject({
      method: 'PUT',
      url: '/api/v1/routes',
      headers,
      payload: { routes: [{ match: {}, relays: ['primary', 'default'] }] },
    });
    const key = await api.services.auth.createApiKey('shop');

    // The worker reads routes at most 2 s old: the first mail may still go to the default relay.
    await submit(api, key, 1, 'first');
    await waitUntil(async () => (await relayOf(api, headers, 'default')).workers === 1, { timeoutMs: 10_000, what: 'the worker’s report' });
    await submitUntilReceived(api, key, primary, 'warm', 20_000, 'a mail through the primary');
    await waitUntil(async () => (await relayOf(api, headers, 'primary')).state === 'up', { timeoutMs: 5_000, what: 'primary up' });
    expect(await relaysDown(api, headers)).toEqual([]);

    await primary.close();
    const stoppedAt = Date.now();
    await submit(api, key, 3, 'outage');
    await waitUntil(async () => (await relayOf(api, headers, 'primary')).state === 'down', {
      timeoutMs: 5_000,
      intervalMs: 50,
      what: 'the primary down on the API-only instance',
    });
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    const down = await relayOf(api, headers, 'primary');
    // Refused, or, for a send whose connection was open as the relay stopped, its goodbye (421 shutting down).
    expect(down).toMatchObject({ state: 'down', workers: 1, lastError: expect.stringMatching(/ECONNREFUSED|^421 /) });
    expect(Date.parse(down.since!)).toBeGreaterThanOrEqual(stoppedAt - 1000);
    expect(await relaysDown(api, headers)).toEqual(['primary']);
    expect(await metrics(api)).toContain('outbox_relay_state{relay="primary",state="down"} 1');
    // The mails failed over to the default relay at once.
    await waitUntil(() => fallback.received.filter((m) => /Subject: outage/.test(m.raw.toString())).length === 3, {
      timeoutMs: 20_000,
      what: 'the outage mails through the fallback',
    });
    const alertOf = async () =>
      (await get<{ rule: string; state: string; summary: string }>(api, '/api/v1/alerts', headers)).find((a) => a.rule === 'relay_down')!;
    await waitUntil(async () => (await alertOf()).state === 'firing', { timeoutMs: 15_000, intervalMs: 100, what: 'relay_down firing' });
    expect((await alertOf()).summary).toContain('Relay primary is down');

    // Back on its port: a probe brings it back (1 s after it went down, then 2 s…), and with it the mails.
    const back = await fixture.startPeer(primaryPort);
    await submitUntilReceived(api, key, back, 'probe', 30_000, 'a mail through the restarted primary');
    await waitUntil(async () => (await relayOf(api, headers, 'primary')).state === 'up', { timeoutMs: 5_000, what: 'primary up again' });
    expect(await relaysDown(api, headers)).toEqual([]);
    await waitUntil(async () => (await alertOf()).state === 'resolved', {
      timeoutMs: 15_000,
      intervalMs: 100,
      what: 'relay_down resolved',
    });

    // The worker stops: its instance row goes, and its reports with it; nobody reports on the relays now.
    instances.splice(instances.indexOf(worker), 1);
    await worker.stop();
    const after = await health(api, headers);
    expect(after.map((relay) => [relay.relay, relay.state, relay.workers])).toEqual([
      ['default', 'idle', 0],
      ['primary', 'idle', 0],
    ]);
  }, 120_000);
});

/** A worker instance's heartbeat at `now`, stale 15 s later: the instance whose relay reports count. */
function beatWorker(store: TestContext['store'], id: string, now: number) {
  return upsertHeartbeat(store.db, {
    id,
    host: 'h',
    pid: 1,
    version: 't',
    roles: 'worker',
    started_at: now,
    last_heartbeat_at: now,
    stale_after_ms: 15_000,
    in_flight: 0,
    delivered_last_minute: 0,
  });
}

describe('the fold', () => {
  const report = (instanceId: string, relay: string, extra: Partial<InstanceRelayReport> = {}): InstanceRelayReport => ({
    instanceId,
    relay,
    state: 'up',
    since: 1_000,
    ratePerSecond: null,
    maxPerSecond: null,
    sentToday: 0,
    maxPerDay: null,
    lastError: null,
    lastErrorAt: null,
    latencyMs: null,
    ...extra,
  });

  it('takes the worst state, sums rates and counts, the fullest quota, the latest error, the median latency; idle for nobody', () => {
    const folded = foldRelayHealth(
      [
        { name: 'eu', maxPerSecond: 10, maxPerDay: 1000 },
        { name: 'asia', maxPerSecond: null, maxPerDay: null },
      ],
      [
        report('a', 'eu', { ratePerSecond: 10, sentToday: 900, latencyMs: 40, lastError: 'old', lastErrorAt: 5 }),
        report('b', 'eu', {
          state: 'throttled',
          since: 2_000,
          ratePerSecond: 2.5,
          sentToday: 300,
          latencyMs: 60,
          lastError: 'new',
          lastErrorAt: 9,
        }),
        report('c', 'eu', { state: 'throttled', since: 1_500, ratePerSecond: 5, sentToday: 10, latencyMs: 100 }),
        report('a', 'default', { state: 'down', since: 3_000 }),
        report('a', 'removed-since', { state: 'down' }),
      ],
    );
    expect(folded.map((relay) => relay.relay)).toEqual(['default', 'asia', 'eu']);
    expect(folded[0]).toMatchObject({ state: 'down', since: new Date(3_000).toISOString(), workers: 1 });
    expect(folded[1]).toEqual({
      relay: 'asia',
      state: 'idle',
      since: null,
      ratePerSecond: null,
      maxPerSecond: null,
      sentToday: 0,
      maxPerDay: null,
      quotaUsed: null,
      lastError: null,
      lastErrorAt: null,
      latencyMs: null,
      workers: 0,
    });
    expect(folded[2]).toEqual({
      relay: 'eu',
      state: 'throttled',
      since: new Date(1_500).toISOString(),
      ratePerSecond: 17.5,
      maxPerSecond: 10,
      sentToday: 1210,
      maxPerDay: 1000,
      quotaUsed: 0.9,
      lastError: 'new',
      lastErrorAt: new Date(9).toISOString(),
      latencyMs: 60,
      workers: 3,
    });
  });

  it('relay_quota fires at ALERT_RELAY_QUOTA of a daily quota used and resolves below it; the ALERT_RELAY_* variables are read', async () => {
    expect(loadConfig({}).alerts).toMatchObject({ relayDownForMs: 60_000, relayQuota: 0.9 });
    expect(loadConfig({ ALERT_RELAY_DOWN_FOR: '0', ALERT_RELAY_QUOTA: '80%' }).alerts).toMatchObject({
      relayDownForMs: 0,
      relayQuota: 0.8,
    });
    expect(() => loadConfig({ ALERT_RELAY_QUOTA: '1.5' })).toThrow(/ALERT_RELAY_QUOTA must be a rate above 0 and at most 1/);

    context = await createTestContext();
    const { store, clock } = context;
    await beatWorker(store, 'w', clock.now());
    await context.services.relays.createRelay({ name: 'eu', url: 'smtp://127.0.0.1:2525', maxPerDay: 1000 }, 'operator:test');
    const evaluator = createAlertEvaluator({ store, clock, settings: { ...DEFAULT_ALERT_SETTINGS, pendingMs: 0, cooldownMs: 0 } });
    const quotaRule = async () => (await context!.services.alerts.listRuleStatuses()).find((rule) => rule.rule === 'relay_quota')!;
    await writeInstanceReports(store.db, 'w', [report('w', 'eu', { maxPerDay: 1000, sentToday: 950 })], clock.now());
    await evaluator.evaluate();
    expect(await quotaRule()).toMatchObject({
      state: 'firing',
      value: 0.95,
      threshold: 0.9,
      unit: 'ratio',
      summary: 'Relay eu used 95% of its daily quota of 1000 in one worker process (threshold 90%)',
    });
    clock.advance(60_000);
    await beatWorker(store, 'w', clock.now());
    await writeInstanceReports(store.db, 'w', [report('w', 'eu', { maxPerDay: 1000, sentToday: 3 })], clock.now());
    await evaluator.evaluate();
    expect(await quotaRule()).toMatchObject({ state: 'resolved', value: 0.003 });
    expect((await context.services.alerts.listRuleStatuses()).find((rule) => rule.rule === 'relay_down')).toMatchObject({
      state: 'ok',
      summary: 'Every relay a live worker sends through answers',
    });
  });

  it('skips the reports of an instance whose heartbeat is stale', async () => {
    context = await createTestContext();
    const { store, clock } = context;
    const beat = (id: string) => beatWorker(store, id, clock.now());
    await beat('old');
    await writeInstanceReports(store.db, 'old', [report('old', 'default', { state: 'down' })], clock.now());
    clock.advance(20_000);
    await beat('new');
    await writeInstanceReports(store.db, 'new', [report('new', 'default', { sentToday: 7 })], clock.now());
    const service = createRelayHealthService({ store, clock });
    expect(await service.listRelayHealth()).toEqual([expect.objectContaining({ relay: 'default', state: 'up', sentToday: 7, workers: 1 })]);
    expect(await service.listRelaysDown()).toEqual([]);
    // A rewrite drops the relays it no longer reports.
    await writeInstanceReports(store.db, 'new', [], clock.now());
    expect(await service.listRelayHealth()).toEqual([expect.objectContaining({ relay: 'default', state: 'idle', workers: 0 })]);
  });
});
