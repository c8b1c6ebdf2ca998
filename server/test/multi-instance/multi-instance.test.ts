/**
 * Scale-out on PostgreSQL (runs only in the suite's PostgreSQL half, see vitest.config.ts): several real
 * instances share one database. Every mail is delivered exactly once without faults; a worker instance
 * killed with SIGKILL loses nothing and resends only what it had in flight; an API-only instance's
 * submission wakes a worker-only instance through LISTEN/NOTIFY instead of its next poll.
 * 500 mails among three instances prove "each exactly once" and "resends only what was in flight" as 5,000 did
 * (each instance claims several batches of them); rates at larger volumes are bench/delivery-processes.ts's.
 * Every test runs with routes configured (docs/relays.md): a named relay `sink` and a rule sending every mail to
 * it, so each mail goes out through the router's named relay, not RELAY_URL's transport.
 */
import { MailStatus } from '@outbox/contract';
import { afterEach, beforeEach, describe, expect, it, onTestFailed } from 'vitest';
import { createAuthService } from '../../src/auth/auth.service.js';
import { createRelayService } from '../../src/relays/relay.service.js';
import { openStore, type Store } from '../../src/store/connection.js';
import { freshEnvironment, killAllSpawned, spawnOutbox, type OutboxEnvironment, type OutboxProcess } from '../support/outbox-process.js';
import { median, waitUntil } from '../support/net.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let relay: TestRelay;
let environment: OutboxEnvironment;
let store: Store;
let processes: OutboxProcess[] = [];
let apiKey: string;

beforeEach(async () => {
  relay = await startTestRelay();
  environment = await freshEnvironment({ RELAY_URL: relay.url, WORKER_CONCURRENCY: '30' });
  store = await openStore({ dataDir: environment.dataDir, databaseUrl: environment.env.DATABASE_URL, maxConnections: 2 });
  // A failure here is only understood with what the instances logged.
  onTestFailed(() => {
    for (const p of processes)
      console.log(
        `--- instance pid ${p.child.pid} ---\n${p
          .output()
          .split('\n')
          .filter((l) => !l.includes('console not built'))
          .slice(-15)
          .join('\n')}`,
      );
  });
  apiKey = await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('load');
  const relays = createRelayService({ store, clock: { now: Date.now } });
  await relays.createRelay({ name: 'sink', url: relay.url }, 'operator:test');
  await relays.replaceRoutes([{ match: {}, relays: ['sink'] }], 'operator:test');
});

afterEach(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  processes = [];
  await killAllSpawned();
  await store.close();
  await relay.close();
  await environment.dispose();
});

async function submitBatches(baseUrl: string, total: number): Promise<void> {
  for (let offset = 0; offset < total; offset += 500) {
    const batch = Array.from({ length: Math.min(500, total - offset) }, (_, i) => ({
      fromMail: 'shop@example.com',
      to: [{ recipientMail: `user${offset + i}@example.net` }],
      subject: `mail ${offset + i}`,
      text: 'x',
    }));
    const response = await fetch(`${baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify(batch),
    });
    expect(response.status).toBe(202);
  }
}

async function countWithStatus(status: number): Promise<number> {
  const row = await store.db
    .selectFrom('mails')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('status', '=', status)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

function deliveriesPerMessage(): Map<string, number> {
  const times = new Map<string, number>();
  for (const message of relay.received) times.set(message.messageId!, (times.get(message.messageId!) ?? 0) + 1);
  return times;
}

describe('several instances on one PostgreSQL database', () => {
  it('three instances start together (migrations under a lock), share 500 mails and deliver each exactly once', async () => {
    const total = 500;
    // Three worker instances start at once, each through the migrations' lock. (They once started API-only, were
    // stopped and started again as workers: three process starts more, for nothing this test asserts.)
    processes = await Promise.all([1, 2, 3].map(() => spawnOutbox({ ...environment.env })));
    await submitBatches(processes[0]!.baseUrl, total);
    await waitUntil(async () => (await countWithStatus(MailStatus.ProviderSent)) === total, {
      timeoutMs: 180_000,
      what: 'every mail ProviderSent',
    });

    const times = deliveriesPerMessage();
    expect(times.size).toBe(total);
    expect(relay.received).toHaveLength(total);
    const workers = await store.db.selectFrom('mail_events').select('actor').distinct().where('type', '=', 'sent').execute();
    expect(workers.length, 'every instance delivered some').toBe(3);
    // Through the route: every attempt names the relay that took it.
    const sent = await store.db.selectFrom('mail_events').select('detail').where('type', '=', 'sent').execute();
    expect(sent.filter((event) => (JSON.parse(event.detail ?? '{}') as { relay?: string }).relay !== 'sink')).toEqual([]);
  }, 300_000);

  it('one worker instance killed with SIGKILL mid-run: the others finish, nothing is lost, resends only among its in-flight mails', async () => {
    const total = 500;
    relay.delayMs = 2;
    // The killed instance's mails come back once its heartbeat is stale (5 s here, the sweeper's next round
    // after), not when their leases run out. The lease stays the default 60 s: with 10 s, at load ~14 on two
    // cores, a mail claimed ahead by a live instance outlived its lease and was sent twice without being the
    // killed instance's (with 4 s, at load ~20, too).
    const heartbeat = { HEARTBEAT_INTERVAL: '1s', INSTANCE_STALE_AFTER: '5s' };
    processes = await Promise.all([1, 2, 3].map(() => spawnOutbox({ ...environment.env, ...heartbeat })));
    const [victim, ...survivors] = processes;
    await submitBatches(survivors[0]!.baseUrl, total);
    await waitUntil(() => relay.received.length >= total / 4, { timeoutMs: 180_000, what: 'a quarter of the mails at the relay' });
    // A worker holds its leases under its instance's id (the heartbeat's), found by the process id.
    const victimInstance = await store.db
      .selectFrom('instances')
      .select('id')
      .where('pid', '=', victim!.child.pid!)
      .executeTakeFirstOrThrow();
    await victim!.kill();
    const heldByVictim = await store.db
      .selectFrom('mail_queue')
      .innerJoin('mails', 'mails.id', 'mail_queue.mail_id')
      .select('mails.message_id')
      .where('mail_queue.lease_owner', '=', victimInstance.id)
      .execute();
    const inFlightOfVictim = new Set(heldByVictim.map((row) => row.message_id));
    await waitUntil(async () => (await countWithStatus(MailStatus.ProviderSent)) === total, {
      timeoutMs: 180_000,
      what: 'every mail ProviderSent',
    });

    const times = deliveriesPerMessage();
    expect(times.size).toBe(total);
    const resent = [...times].filter(([, count]) => count > 1).map(([messageId]) => messageId);
    for (const messageId of resent)
      expect(inFlightOfVictim.has(messageId), `${messageId} was sent twice but was not in flight at the killed instance`).toBe(true);
    const duplicates = relay.received.length - times.size;
    console.log(
      `multi-instance kill: the killed instance held ${inFlightOfVictim.size} mails in flight; ${duplicates} were delivered twice`,
    );
  }, 300_000);

  it('a mail submitted to an API-only instance starts delivery on a worker-only instance about as fast as one submitted to the worker itself (LISTEN/NOTIFY), not at its next poll', async () => {
    // The worker looks for due mail on its own only every 30 s: a submission to the other instance that did not
    // wake it would wait ~15 s on average, far beyond what load on the machine adds to a wake (medians 0.2-0.5 s
    // apart at load 4 with a 1 s poll, where the comparison could not tell a wake from a poll).
    const idlePollMs = 30_000;
    const [api, worker] = await Promise.all([
      spawnOutbox({ ...environment.env, WORKER: 'off' }),
      spawnOutbox({ ...environment.env, SMTP_PORT: '0', WORKER_IDLE_POLL: `${idlePollMs}ms` }),
    ]);
    processes = [api!, worker!];
    // Time from a submission's request to the relay seeing the delivery start.
    const deliveryStart = async (baseUrl: string): Promise<number> => {
      const before = relay.attempts;
      const started = Date.now();
      await submitBatches(baseUrl, 1);
      await waitUntil(() => relay.attempts > before, { timeoutMs: idlePollMs, what: 'the relay to see the delivery' });
      return Date.now() - started;
    };
    // Interleaved, so that load on the machine weighs on both series alike. The worker instance wakes at
    // once for its own submissions (the in-process change feed); for the API instance's only LISTEN/NOTIFY
    // can wake it before its next idle poll.
    const crossInstance: number[] = [];
    const sameInstance: number[] = [];
    for (let i = 0; i < 8; i++) {
      crossInstance.push(await deliveryStart(api!.baseUrl));
      await new Promise((resolve) => setTimeout(resolve, 100 + i * 37));
      sameInstance.push(await deliveryStart(worker!.baseUrl));
      await new Promise((resolve) => setTimeout(resolve, 100 + i * 37));
    }
    const extra = median(crossInstance) - median(sameInstance);
    console.log(
      `delivery start (ms), submitted to the API instance: ${crossInstance.join(', ')} (median ${median(crossInstance)}); ` +
        `to the worker instance: ${sameInstance.join(', ')} (median ${median(sameInstance)}); the hop between instances adds ${extra} ms`,
    );
    expect(median(crossInstance), 'a submission to the other instance should wake the worker, not wait for its idle poll').toBeLessThan(
      idlePollMs / 6,
    );
    expect(extra, 'the hop between instances should cost a wake, not half an idle poll (15 s)').toBeLessThan(2_000);
  }, 180_000);
});
