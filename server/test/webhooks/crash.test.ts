/**
 * At-least-once across a crash, wired as `npm start` wires it: the server process is killed with SIGKILL while
 * 400 mails are delivered and their events are pushed to an endpoint subscribed to everything; after a
 * restart every event of every committed transition reaches the receiver, signed, and the only duplicates are
 * deliveries that were in flight at the kill. 400 mails (800 events) put the kill in the middle of delivery and
 * dispatch as 2,000 did: the property holds for each event, whatever their number.
 */
import { MailStatus } from '@outbox/contract';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { openStore, type Store } from '../../src/store/connection.js';
import { freshEnvironment, killAllSpawned, spawnOutbox, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { waitUntil } from '../support/net.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { startReceiver, verify, type Receiver } from './receiver.js';

let relay: TestRelay;
let receiver: Receiver;
let environment: OutboxEnvironment;
let store: Store;
let restarted: RunningOutbox | undefined;

beforeAll(async () => {
  relay = await startTestRelay();
  receiver = await startReceiver();
  environment = await freshEnvironment({
    RELAY_URL: relay.url,
    // Long enough for a send on a loaded machine: with 2 s, at load 20, the restarted worker's own leases ran
    // out before their outcomes were written, so its mails went round again and again, and the wait for every
    // mail ProviderSent below failed on both engines. The killed worker's mails come back once its heartbeat is
    // 2 s stale: the restarted instance is the only live one, and a sweeper never counts its own instance stale.
    LEASE_SECONDS: '8',
    HEARTBEAT_INTERVAL: '1s',
    INSTANCE_STALE_AFTER: '2s',
    WORKER_CONCURRENCY: '50',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_TIMEOUT: '1s',
    WEBHOOK_RETRY_SCHEDULE: '0,200ms,500ms,1s,2s,2s,2s',
  });
  store = await openStore({ dataDir: environment.dataDir, databaseUrl: environment.env.DATABASE_URL, maxConnections: 2 });
});

afterAll(async () => {
  await restarted?.stop();
  await killAllSpawned();
  await store?.close();
  await relay?.close();
  await receiver?.close();
  await environment?.dispose();
});

async function login(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
  });
  return ((await response.json()) as { data: Array<{ token: string }> }).data[0]!.token;
}

const count = async (query: Promise<{ n: number | string | bigint }>) => Number((await query).n);

it('SIGKILL while delivering: after a restart every committed event reaches the receiver; duplicates at most what was in flight', async () => {
  const total = 400;
  relay.delayMs = 2;
  // Accept every mail with no worker and no webhook delivery running (in this process: only the worker is killed later), so the
  // kill falls during delivery and dispatch only.
  const intake = await startInProcess({ ...environment.env, WORKER: 'off', WEBHOOKS: 'off', SMTP_PORT: '0' });
  const intakeUrl = `http://127.0.0.1:${intake.httpPort}`;
  const token = await login(intakeUrl);
  const created = await fetch(`${intakeUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Token ${token}` },
    body: JSON.stringify({ url: receiver.url, description: 'everything' }),
  });
  expect(created.status).toBe(201);
  const { secret } = ((await created.json()) as { data: Array<{ secret: string }> }).data[0]!;
  const { createAuthService } = await import('../../src/auth/auth.service.js');
  const apiKey = await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('load');
  for (let offset = 0; offset < total; offset += 500) {
    const batch = Array.from({ length: Math.min(500, total - offset) }, (_, i) => ({
      fromMail: 'shop@example.com',
      to: [{ recipientMail: `user${offset + i}@example.net` }],
      subject: `mail ${offset + i}`,
      text: 'x',
    }));
    const response = await fetch(`${intakeUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify(batch),
    });
    expect(response.status).toBe(202);
  }
  await intake.stop();

  const worker = await spawnOutbox({ ...environment.env });
  // Mid-way: some mails sent and their events pushed, most not yet.
  await waitUntil(() => relay.received.length >= total / 4 && receiver.requests.length >= total / 10, {
    timeoutMs: 60_000,
    what: 'a quarter of the mails at the relay and a tenth as many webhook requests before the kill',
  });
  await worker.kill();
  const receivedAtKill = receiver.requests.length;
  // In flight at the kill: deliveries claimed (leased) and not recorded. Each may arrive once more.
  const inFlightAtKill = await count(
    store.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('lease_owner', 'is not', null)
      .executeTakeFirstOrThrow(),
  );
  const sentAtKill = await count(
    store.db
      .selectFrom('mails')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('status', '=', MailStatus.ProviderSent)
      .executeTakeFirstOrThrow(),
  );
  expect(sentAtKill).toBeLessThan(total);

  // The restart runs in this process: only the kill needed a process of its own.
  restarted = await startInProcess(environment.env);
  await waitUntil(
    async () =>
      (await count(
        store.db
          .selectFrom('mails')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('status', '=', MailStatus.ProviderSent)
          .executeTakeFirstOrThrow(),
      )) === total,
    // With 2,000 mails the restarted worker delivered ~1,500 and dispatched ~3,000 events in this process: 5 s
    // alone, 120 s beside 14 CPU burners on two cores, past 240 s in a full run beside other work (load 20).
    { timeoutMs: 360_000, what: 'every mail ProviderSent after the restart' },
  );
  // Every event of every committed transition, whatever its type.
  const events = await store.db.selectFrom('application_events').select(['id', 'type']).execute();
  expect(events.filter((e) => e.type === 'mail.queued')).toHaveLength(total);
  expect(events.filter((e) => e.type === 'mail.sent')).toHaveLength(total);
  const expected = new Set(events.map((e) => e.id));
  await waitUntil(
    () => {
      const seen = new Set(receiver.requests.map((r) => r.headers['webhook-id']));
      return [...expected].every((id) => seen.has(id));
    },
    { timeoutMs: 120_000, what: `all ${expected.size} events at the receiver` },
  );
  for (const request of receiver.requests) verify(secret, request);
  const duplicates = receiver.requests.length - new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size;
  // At-least-once has a second source of repeats besides the kill: an attempt the dispatcher gave up on (its
  // timeout passed on a loaded machine) that the receiver did get is logged failed and sent again.
  const failedAttempts = await count(
    store.db
      .selectFrom('webhook_attempts')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('succeeded', '=', 0)
      .executeTakeFirstOrThrow(),
  );
  console.log(
    `crash test: ${expected.size} events, ${receivedAtKill} received before the kill, ${inFlightAtKill} in flight at it, ${failedAttempts} attempts logged failed, ${duplicates} received twice`,
  );
  expect(duplicates).toBeLessThanOrEqual(inFlightAtKill + failedAttempts);
  expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(expected.size);
}, 600_000);
