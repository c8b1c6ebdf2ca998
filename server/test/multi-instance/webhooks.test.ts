/**
 * Two instances dispatching webhooks from one PostgreSQL database (PostgreSQL only, see vitest.config.ts):
 * both take part, every event reaches the receiver, and none is attempted by both (FOR UPDATE SKIP LOCKED on
 * the fan-out and the claim, deliveries leased to one instance).
 */
import { MailStatus } from '@outbox/contract';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { waitUntil } from '../support/net.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { startReceiver, verify, type Receiver } from '../webhooks/receiver.js';

let relay: TestRelay;
let receiver: Receiver;
let environment: OutboxEnvironment;
const instances: RunningOutbox[] = [];

beforeAll(async () => {
  relay = await startTestRelay();
  receiver = await startReceiver();
  environment = await freshEnvironment({ RELAY_URL: relay.url, WORKER_CONCURRENCY: '20', WEBHOOK_ALLOW_PRIVATE: 'true', SMTP_PORT: '0' });
});

afterAll(async () => {
  await Promise.all(instances.map((i) => i.stop()));
  await relay?.close();
  await receiver?.close();
  await environment?.dispose();
});

it('two instances share the deliveries: every event delivered once, none attempted by both', async () => {
  // 200 mails (400 events) keep both instances claiming at once, as 600 did; the deadlines below only bound a
  // hang (at load 19 on two cores 600 mails were not all sent in 60 s).
  const total = 200;
  for (let i = 0; i < 2; i += 1) instances.push(await startInProcess(environment.env));
  const [a, b] = instances as [RunningOutbox, RunningOutbox];
  // A receiver that takes a few milliseconds, so both instances have requests in flight at once.
  receiver.answer = () => ({ status: 200, delayMs: 3 });
  const endpoint = await a.services.webhooks.createEndpoint({ url: receiver.url }, 'test');
  const key = await a.services.auth.createApiKey('load');
  const principal = (await a.services.auth.findApiKeyPrincipal(key))!;
  // Half the mails submitted on each instance, so both fan out events they heard of first.
  for (let offset = 0; offset < total; offset += 100) {
    const instance = (offset / 100) % 2 === 0 ? a : b;
    await instance.services.submissions.submitJson(
      principal,
      Array.from({ length: 100 }, (_, i) => ({
        fromMail: 'shop@example.com',
        to: [{ recipientMail: `u${offset + i}@example.net` }],
        subject: `m${offset + i}`,
        text: 'x',
      })),
      true,
    );
  }
  await waitUntil(
    async () => {
      const sent = await a.store.db
        .selectFrom('mails')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('status', '=', MailStatus.ProviderSent)
        .executeTakeFirstOrThrow();
      return Number(sent.n) === total;
    },
    { timeoutMs: 180_000, what: 'every mail ProviderSent' },
  );
  const events = await a.store.db.selectFrom('application_events').select(['id', 'type']).execute();
  // Each mail's mail.queued and mail.sent; a send that failed on a loaded machine adds its mail.deferred (a full run
  // once saw 3 of 1,200), which must reach the receiver once like every other event.
  expect(events.filter((e) => e.type === 'mail.queued')).toHaveLength(total);
  expect(events.filter((e) => e.type === 'mail.sent')).toHaveLength(total);
  expect(events.filter((e) => e.type !== 'mail.queued' && e.type !== 'mail.sent').every((e) => e.type === 'mail.deferred')).toBe(true);
  await waitUntil(() => new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size === events.length, {
    timeoutMs: 180_000,
    what: `all ${events.length} events at the receiver`,
  });
  const ids = receiver.requests.map((r) => r.headers['webhook-id']);
  expect(ids).toHaveLength(events.length);
  expect(new Set(ids).size).toBe(events.length);
  for (const request of receiver.requests.slice(0, 50)) verify(endpoint.secret, request);
  // The attempts are recorded in groups, a moment after their answers.
  let attempts: Array<{ delivery_id: number }> = [];
  await waitUntil(
    async () => {
      attempts = await a.store.db.selectFrom('webhook_attempts').select(['delivery_id']).execute();
      return attempts.length >= events.length;
    },
    { what: 'every attempt recorded' },
  );
  expect(attempts).toHaveLength(events.length);
  expect(new Set(attempts.map((x) => x.delivery_id)).size).toBe(events.length);
  const [byA, byB] = [a.webhookDispatcher!.attempts(), b.webhookDispatcher!.attempts()];
  console.log(`webhooks on two instances: ${byA} attempts by A, ${byB} by B`);
  expect(byA + byB).toBe(events.length);
  expect(byA).toBeGreaterThan(0);
  expect(byB).toBeGreaterThan(0);
}, 420_000);
