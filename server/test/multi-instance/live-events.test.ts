/**
 * Live updates across instances on one PostgreSQL (runs only in the suite's PostgreSQL half): a console's
 * stream on instance A hears what instance B did (an operator's dequeue, a delivery by B's worker, a logout),
 * through LISTEN/NOTIFY. Prints the change→event latency (p50/p95) measured from outside.
 * The tests share two instances, API-only A and worker B (a process start is most of each test's time on a busy
 * machine): mails seeded Queued are not due for a year, so B's worker leaves the dequeue test's mails alone.
 */
import { MailStatus, type LiveMailEvent } from '@outbox/contract';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from 'vitest';
import { createAuthService } from '../../src/auth/auth.service.js';
import { openStore, type Store } from '../../src/store/connection.js';
import { seedMails } from '../support/mails.js';
import { freshEnvironment, killAllSpawned, spawnOutbox, type OutboxEnvironment, type OutboxProcess } from '../support/outbox-process.js';
import { openEvents, type SseEvent, type SseStream } from '../support/sse.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let relay: TestRelay;
let environment: OutboxEnvironment;
let store: Store;
let processes: OutboxProcess[] = [];
let a: OutboxProcess;
let b: OutboxProcess;
let streams: SseStream[] = [];

beforeAll(async () => {
  relay = await startTestRelay();
  environment = await freshEnvironment({ RELAY_URL: relay.url });
  store = await openStore({ dataDir: environment.dataDir, databaseUrl: environment.env.DATABASE_URL, maxConnections: 2 });
  // Two server processes start together: past 30 s at load 17 on two cores.
  [a, b] = await Promise.all([spawnOutbox({ ...environment.env, WORKER: 'off' }), spawnOutbox({ ...environment.env, WORKER: 'on' })]);
  processes = [a, b];
}, 120_000);

beforeEach(() => {
  onTestFailed(() => {
    for (const p of processes) console.log(`--- instance pid ${p.child.pid} ---\n${p.output().split('\n').slice(-15).join('\n')}`);
  });
  return () => {
    for (const s of streams) s.close();
    streams = [];
  };
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  processes = [];
  await killAllSpawned();
  await store.close();
  await relay.close();
  await environment.dispose();
});

async function login(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: environment.env.OUTBOX_ADMIN_USER, password: environment.env.OUTBOX_ADMIN_PASSWORD }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Array<{ token: string }> }).data[0]!.token;
}

const mailsOf = (e: SseEvent) => (e.event === 'mail' ? (e.data as LiveMailEvent).mails : []);
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

describe('live events across instances', () => {
  it('a dequeue on instance B reaches a stream on instance A through LISTEN/NOTIFY (p50/p95 printed)', async () => {
    const ids = await seedMails(
      store,
      Array.from({ length: 40 }, () => ({ status: MailStatus.Queued })),
    );
    const token = await login(a.baseUrl);
    const stream = await openEvents(a.baseUrl, token);
    streams.push(stream);
    await stream.next(() => true);

    const latencies: number[] = [];
    for (const id of ids) {
      const from = stream.events.length;
      const startedAt = performance.now();
      const response = await fetch(`${b.baseUrl}/api/v1/mail/${id}/dequeue`, { headers: { authorization: `Token ${token}` } });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      const event = await stream.next((e) => mailsOf(e).some((m) => m.id === id && m.status === MailStatus.Dequeued), { from });
      latencies.push(event.at - startedAt);
    }
    const p50 = percentile(latencies, 0.5);
    const p95 = percentile(latencies, 0.95);
    console.log(
      `[live] dequeue on B → event on A, ${latencies.length} changes: p50 ${p50.toFixed(0)} ms, p95 ${p95.toFixed(0)} ms (includes the HTTP call and the ≤300 ms coalescing)`,
    );
    // The goal is a console updated within 1 s: the typical change (p50) within it, the slowest within what a busy
    // two-core machine allows (a full suite beside it: p50 316–346 ms, p95 1.2–1.5 s). Without LISTEN/NOTIFY no
    // event would come at all; bench/live.ts measures the figure itself.
    expect(p50).toBeLessThan(1000);
    expect(p95).toBeLessThan(4000);
  });

  it('a mail submitted to API-only instance A and delivered by worker instance B shows as ProviderSent on A’s stream', async () => {
    const token = await login(a.baseUrl);
    const apiKey = await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('live');
    const stream = await openEvents(a.baseUrl, token);
    streams.push(stream);
    await stream.next(() => true);

    const submitted = await fetch(`${a.baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'live', text: 'x' }),
    });
    expect(submitted.status).toBe(202);
    const id = ((await submitted.json()) as { data: Array<{ id: number }> }).data[0]!.id;
    const sent = await stream.next((e) => mailsOf(e).some((m) => m.id === id && m.status === MailStatus.ProviderSent), {
      timeoutMs: 15_000,
    });
    expect(mailsOf(sent).find((m) => m.id === id)!.providerSentDate).not.toBeNull();
    expect(stream.events.some((e) => mailsOf(e).some((m) => m.id === id && m.isNew))).toBe(true);
    expect(relay.received).toHaveLength(1);
  });

  it('a logout on instance B ends the same session’s stream on instance A at once', async () => {
    const token = await login(a.baseUrl);
    const stream = await openEvents(a.baseUrl, token);
    streams.push(stream);
    await stream.next(() => true);
    const logout = await fetch(`${b.baseUrl}/api/v1/logout`, { method: 'POST', headers: { authorization: `Token ${token}` } });
    expect(logout.status).toBe(200);
    await logout.arrayBuffer();
    // The periodic check is 15 s; the revocation travels through NOTIFY in milliseconds.
    await Promise.race([stream.ended, new Promise((_, reject) => setTimeout(() => reject(new Error('the stream is still open')), 3000))]);
  });
});
