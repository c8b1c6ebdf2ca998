/**
 * The applications' events on a real store, both engines: every path that moves a mail writes
 * its event in the same transaction (HTTP, batch and SMTP submission, the worker's outcomes against a real SMTP
 * peer, operator and bulk actions, the lease sweeper), with a stable id, a per-mail sequence without gaps and the
 * data of docs/webhooks.md#events; a claim, a sweep back to Queued, the demo data and retention's purge write none;
 * a transaction that fails leaves neither the move nor its event.
 */
import {
  MailStatus,
  type MailDeferredData,
  type MailFailedData,
  type MailOperatorActionData,
  type MailQueuedData,
  type MailSentData,
  type SubmitMailRequest,
} from '@outbox/contract';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/auth/auth.service.js';
import { releaseExpiredLeases } from '../../src/delivery/lease-sweeper.js';
import { createRelayTransport, type RelayTransport } from '../../src/delivery/relay-transport.js';
import { createRetryPolicy } from '../../src/delivery/retry-policy.js';
import { claimTransition } from '../../src/delivery/lease-transitions.js';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/delivery/worker.js';
import { insertDemoMails } from '../../src/demo/demo-data.js';
import { dequeueTransition } from '../../src/mail/lifecycle.js';
import { applyTransitions } from '../../src/mail/write/apply.js';
import type { ApplicationEventRow } from '../../src/store/schema.js';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';
import { startSmtpIntake } from '../support/smtp-intake.js';
import { startTestRelay, type RelayAnswer, type TestRelay } from '../support/test-relay.js';

let context: TestContext;
let relay: TestRelay;
let shop: ApiKeyPrincipal;
let shopKey: string;
let token: string;
const workers: DeliveryWorker[] = [];
const transports: RelayTransport[] = [];
const MINUTE = 60_000;

beforeAll(async () => {
  context = await createTestContext();
  relay = await startTestRelay();
  shopKey = await context.services.auth.createApiKey('shop');
  shop = (await context.services.auth.findApiKeyPrincipal(shopKey))!;
  token = await loginAs(context, 'alice');
});

afterAll(async () => {
  await relay.close();
  await context.close();
});

beforeEach(() => {
  relay.rcptAnswer = () => ({ accept: true });
  relay.answer = () => ({ accept: true });
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 0 })));
  for (const transport of transports.splice(0)) await transport.close();
  // A 5.1.1 refusal puts the address on the suppression list (docs/lifecycle.md); each test starts without one.
  await context.store.db.deleteFrom('suppressions').execute();
});

function startWorker(maxAttempts: number): DeliveryWorker {
  const transport = createRelayTransport(relay.url, { connectionTimeoutMs: 2_000, socketTimeoutMs: 5_000 });
  transports.push(transport);
  const worker = createDeliveryWorker({
    store: context.store,
    clock: context.clock,
    transport,
    retryPolicy: createRetryPolicy({ maxAttempts, baseDelayMs: MINUTE, jitter: 0, maxAgeMs: 24 * 60 * MINUTE }),
    concurrency: 4,
    leaseMs: MINUTE,
    pollIntervalMs: 20,
    flushDelayMs: 1,
  });
  worker.start();
  workers.push(worker);
  return worker;
}

const request = (overrides: Partial<SubmitMailRequest> = {}): SubmitMailRequest => ({
  fromName: 'Shop',
  fromMail: 'shop@example.com',
  to: [
    { recipientName: 'Ann', recipientMail: 'ann@example.net' },
    { recipientName: 'Bob', recipientMail: 'bob@example.net' },
  ],
  bcc: [{ recipientName: 'Di', recipientMail: 'di@example.net' }],
  subject: 'Your order',
  text: 'Thanks!',
  ...overrides,
});

async function submitOverHttp(body: SubmitMailRequest | SubmitMailRequest[]): Promise<number[]> {
  const response = await context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(shopKey), payload: JSON.stringify(body) });
  expect(response.statusCode, response.body).toBe(202);
  return (response.json() as { data: Array<{ id: number }> }).data.map((m) => m.id);
}

async function eventsOf(mailId: number): Promise<ApplicationEventRow[]> {
  return context.store.db.selectFrom('application_events').selectAll().where('mail_id', '=', mailId).orderBy('mail_seq').execute();
}

const dataOf = <T>(event: ApplicationEventRow | undefined): T => JSON.parse(event!.payload) as T;

async function waitForEvents(mailId: number, count: number): Promise<ApplicationEventRow[]> {
  await expect.poll(async () => (await eventsOf(mailId)).length, { timeout: 10_000, interval: 10 }).toBe(count);
  return eventsOf(mailId);
}

/** Every event of the mail has a distinct evt_ id and the sequence 1, 2, … (as stored and in `data`). */
function expectWellFormed(events: ApplicationEventRow[]): void {
  expect(events.map((e) => e.mail_seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.map((e) => dataOf<{ sequence: number }>(e).sequence)).toEqual(events.map((_, i) => i + 1));
  for (const event of events) expect(event.id).toMatch(/^evt_[a-z2-7]{26}$/);
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
}

describe('application events', () => {
  it('a JSON submission writes mail.queued in its transaction: sequence 1, the application, the envelope recipients', async () => {
    const [id] = await submitOverHttp(request({ idempotencyKey: 'order-1' }));
    const events = await eventsOf(id!);
    expect(events).toHaveLength(1);
    expectWellFormed(events);
    expect(events[0]).toMatchObject({
      type: 'mail.queued',
      mail_id: id,
      api_key_id: shop.id,
      // No webhook endpoint is enabled: nobody will receive it, so it is written fanned out.
      fanned_out_at: context.clock.now(),
      created_at: context.clock.now(),
    });
    const row = await context.store.db
      .selectFrom('mails')
      .select(['message_id', 'event_seq', 'api_key_id'])
      .where('id', '=', id!)
      .executeTakeFirstOrThrow();
    expect(row.event_seq).toBe(1);
    expect(row.api_key_id).toBe(shop.id);
    expect(dataOf<MailQueuedData>(events[0])).toEqual({
      mailId: id,
      sequence: 1,
      messageId: row.message_id,
      idempotencyKey: 'order-1',
      subject: 'Your order',
      application: 'shop',
      recipients: ['ann@example.net', 'bob@example.net', 'di@example.net'],
      status: 'Queued',
      queuedAt: new Date(context.clock.now()).toISOString(),
    });

    // The same idempotency key again: the first mail, and no second event.
    expect(await submitOverHttp(request({ idempotencyKey: 'order-1' }))).toEqual([id]);
    expect(await eventsOf(id!)).toHaveLength(1);
  });

  it('an event waits for the fan-out while an endpoint is enabled, and is written fanned out while none is (it costs its insert alone)', async () => {
    const endpoint = await context.services.webhooks.createEndpoint({ url: 'https://hooks.example.net/outbox' }, 'test');
    const [waiting] = await submitOverHttp(request());
    expect((await eventsOf(waiting!))[0]).toMatchObject({ type: 'mail.queued', fanned_out_at: null });
    await context.services.webhooks.updateEndpoint(endpoint.id, { enabled: false }, 'test');
    const [unheard] = await submitOverHttp(request());
    expect((await eventsOf(unheard!))[0]).toMatchObject({ type: 'mail.queued', fanned_out_at: context.clock.now() });
  });
  it('a batch writes one mail.queued per mail; an SMTP submission names its key too', async () => {
    const ids = await submitOverHttp([request({ subject: 'a' }), request({ subject: 'b' }), request({ subject: 'c' })]);
    for (const id of ids) expect((await eventsOf(id)).map((e) => e.type)).toEqual(['mail.queued']);

    const intake = await startSmtpIntake(context, 'newsletter');
    try {
      const id = await intake.send({ from: 'news@example.com', to: 'eve@example.net', subject: 'Over SMTP', text: 'hi' });
      const [event] = await eventsOf(id);
      expect(event).toMatchObject({ type: 'mail.queued', mail_seq: 1 });
      expect(dataOf<MailQueuedData>(event)).toMatchObject({
        application: 'newsletter',
        recipients: ['eve@example.net'],
        subject: 'Over SMTP',
      });
      const row = await context.store.db.selectFrom('mails').select('api_key_id').where('id', '=', id).executeTakeFirstOrThrow();
      expect(row.api_key_id).toBe(event!.api_key_id);
      expect(row.api_key_id).not.toBeNull();
    } finally {
      await intake.close();
    }
  });

  it('delivery: a 4xx for one recipient is mail.deferred (attempt, next try, outcomes), then mail.sent with who was accepted and refused; claims write none', async () => {
    // Other tests' mails may be delivered meanwhile: the answers go by this mail's own addresses.
    let greylisted = 0;
    relay.rcptAnswer = (address): RelayAnswer =>
      address === 'bob.d@example.net'
        ? { code: 550, message: '5.1.1 No such user' }
        : address === 'di.d@example.net' && greylisted++ === 0
          ? { code: 451, message: '4.7.1 Greylisted' }
          : { accept: true };
    const [id] = await submitOverHttp(
      request({
        to: [
          { recipientName: 'Ann', recipientMail: 'ann.d@example.net' },
          { recipientName: 'Bob', recipientMail: 'bob.d@example.net' },
        ],
        bcc: [{ recipientName: 'Di', recipientMail: 'di.d@example.net' }],
      }),
    );
    const worker = startWorker(5);
    let events = await waitForEvents(id!, 2);
    const deferred = dataOf<MailDeferredData>(events[1]);
    expect(events[1]!.type).toBe('mail.deferred');
    expect(deferred).toMatchObject({
      sequence: 2,
      status: 'Queued',
      attempt: 1,
      reason: 'deferred',
      application: 'shop',
      nextAttemptAt: new Date(context.clock.now() + MINUTE).toISOString(),
    });
    expect(deferred.outcomes).toEqual([
      { address: 'ann.d@example.net', outcome: 'accepted', reply: expect.stringMatching(/^250/) },
      { address: 'bob.d@example.net', outcome: 'rejected', reply: '550 5.1.1 No such user' },
      { address: 'di.d@example.net', outcome: 'deferred', reply: '451 4.7.1 Greylisted' },
    ]);

    context.clock.advance(MINUTE);
    worker.wake();
    events = await waitForEvents(id!, 3);
    expectWellFormed(events);
    expect(events.map((e) => e.type)).toEqual(['mail.queued', 'mail.deferred', 'mail.sent']);
    const sent = dataOf<MailSentData>(events[2]);
    expect(sent).toMatchObject({
      status: 'ProviderSent',
      attempt: 2,
      accepted: ['ann.d@example.net', 'di.d@example.net'],
      rejected: [{ address: 'bob.d@example.net', reply: '550 5.1.1 No such user' }],
      sentAt: new Date(context.clock.now()).toISOString(),
    });
    expect(sent.reply).toMatch(/^250/);
    expect(events[2]!.created_at).toBe(context.clock.now());
  });

  it("delivery: a 5xx for every recipient is mail.failed with each recipient's reply", async () => {
    relay.rcptAnswer = (address) => ({ code: 550, message: `5.1.1 ${address} unknown` });
    const [id] = await submitOverHttp(request({ bcc: [] }));
    startWorker(5);
    const events = await waitForEvents(id!, 2);
    expect(events[1]!.type).toBe('mail.failed');
    expect(dataOf<MailFailedData>(events[1])).toMatchObject({
      status: 'ProviderError',
      reason: 'rejected',
      attempt: 1,
      outcomes: [
        { address: 'ann@example.net', outcome: 'rejected', reply: '550 5.1.1 ann@example.net unknown' },
        { address: 'bob@example.net', outcome: 'rejected', reply: '550 5.1.1 bob@example.net unknown' },
      ],
    });
  });

  it('operator actions name the operator: dequeue, requeue, delete (the event outlives its mail), bulk', async () => {
    const [id, other] = await submitOverHttp([request(), request()]);
    const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
      const response = await context.app.inject({
        method,
        url,
        headers: auth(token),
        ...(payload ? { payload: JSON.stringify(payload) } : {}),
      });
      expect(response.statusCode, response.body).toBe(200);
    };
    await call('POST', `/api/v1/mail/${id}/dequeue`);
    await call('POST', `/api/v1/mail/${id}/requeue`);
    await call('POST', `/api/v1/mail/${id}/dequeue`);
    await call('DELETE', `/api/v1/mail/${id}`);
    const events = await eventsOf(id!);
    expectWellFormed(events);
    expect(events.map((e) => e.type)).toEqual(['mail.queued', 'mail.dequeued', 'mail.requeued', 'mail.dequeued', 'mail.deleted']);
    expect(dataOf<MailOperatorActionData>(events[2])).toMatchObject({ operator: 'alice', previousStatus: 'Dequeued', status: 'Queued' });
    expect(dataOf<MailOperatorActionData>(events[4])).toMatchObject({
      operator: 'alice',
      previousStatus: 'Dequeued',
      status: null,
      application: 'shop',
      recipients: ['ann@example.net', 'bob@example.net', 'di@example.net'],
    });
    expect(await context.store.db.selectFrom('mails').select('id').where('id', '=', id!).executeTakeFirst()).toBeUndefined();

    await call('POST', '/api/v1/mail/bulk', { action: 'dequeue', ids: [other, id] });
    await call('POST', '/api/v1/mail/bulk', { action: 'delete', ids: [other] });
    expect((await eventsOf(other!)).map((e) => [e.type, dataOf<MailOperatorActionData>(e).operator ?? null])).toEqual([
      ['mail.queued', null],
      ['mail.dequeued', 'alice'],
      ['mail.deleted', 'alice'],
    ]);
  });

  it('the lease sweeper: a return to Queued writes none, a return that spends the budget is mail.failed', async () => {
    const [kept, spent] = await submitOverHttp([request({ subject: 'kept' }), request({ subject: 'spent' })]);
    const lease = { owner: 'gone', expiresAt: context.clock.now() + MINUTE };
    await context.store.db
      .transaction()
      .execute((trx) =>
        applyTransitions(trx, [claimTransition(kept!, context.clock.now(), lease), claimTransition(spent!, context.clock.now(), lease)]),
      );
    expect((await eventsOf(kept!)).map((e) => e.type)).toEqual(['mail.queued']);
    // Only `spent` has no budget left: a policy of one attempt for it, generous for the other.
    context.clock.advance(2 * MINUTE);
    await context.store.db
      .transaction()
      .execute((trx) =>
        releaseExpiredLeases(trx, context.clock.now(), createRetryPolicy({ maxAttempts: 5 }), 'sweeper-a').then(() => undefined),
      );
    expect((await eventsOf(kept!)).map((e) => e.type)).toEqual(['mail.queued']);
    await context.store.db
      .transaction()
      .execute((trx) =>
        applyTransitions(trx, [claimTransition(spent!, context.clock.now(), { owner: 'gone', expiresAt: context.clock.now() + MINUTE })]),
      );
    context.clock.advance(2 * MINUTE);
    await context.store.db
      .transaction()
      .execute((trx) => releaseExpiredLeases(trx, context.clock.now(), createRetryPolicy({ maxAttempts: 1 }), 'sweeper-b'));
    const events = await eventsOf(spent!);
    expectWellFormed(events);
    expect(events.map((e) => e.type)).toEqual(['mail.queued', 'mail.failed']);
    expect(dataOf<MailFailedData>(events[1])).toMatchObject({ status: 'Error', reason: 'lease-expired', attempt: 2 });
    // Leave nothing due for the other tests' workers.
    await context.store.db
      .transaction()
      .execute((trx) => applyTransitions(trx, [dequeueTransition(kept!, context.clock.now(), 'operator:test')]));
  });

  it('a transaction that fails after the move leaves neither the move nor its event; a missed move writes none', async () => {
    const [id] = await submitOverHttp(request());
    await expect(
      context.store.db.transaction().execute(async (trx) => {
        await applyTransitions(trx, [dequeueTransition(id!, context.clock.now(), 'operator:test')]);
        throw new Error('the caller fails after the move');
      }),
    ).rejects.toThrow('the caller fails');
    expect((await eventsOf(id!)).map((e) => e.type)).toEqual(['mail.queued']);
    const row = await context.store.db.selectFrom('mails').select(['status', 'event_seq']).where('id', '=', id!).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: MailStatus.Queued, event_seq: 1 });

    await context.store.db
      .transaction()
      .execute((trx) => applyTransitions(trx, [dequeueTransition(id!, context.clock.now(), 'operator:test')]));
    const missed = await context.store.db
      .transaction()
      .execute((trx) => applyTransitions(trx, [dequeueTransition(id!, context.clock.now(), 'operator:test')]));
    expect(missed.missed).toEqual([id]);
    expect((await eventsOf(id!)).map((e) => e.type)).toEqual(['mail.queued', 'mail.dequeued']);
  });

  it('demo data writes no application events; retention purges events older than RETENTION_DAYS', async () => {
    const before = await context.store.db
      .selectFrom('application_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    await insertDemoMails(context.store, { count: 200, now: context.clock.now(), seed: 7, spanMs: 86_400_000 });
    const after = await context.store.db
      .selectFrom('application_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));

    const [old] = await submitOverHttp(request({ subject: 'old' }));
    await context.store.db
      .transaction()
      .execute((trx) => applyTransitions(trx, [dequeueTransition(old!, context.clock.now(), 'operator:test')]));
    context.clock.advance(31 * 86_400_000);
    const [fresh] = await submitOverHttp(request({ subject: 'fresh' }));
    await context.services.mails.purgeFinishedMails(30, 'system:retention');
    expect(await eventsOf(old!)).toEqual([]);
    expect((await eventsOf(fresh!)).map((e) => e.type)).toEqual(['mail.queued']);
    // Dequeued mails are purged too, and the purge itself makes no mail.deleted event.
    expect(await context.store.db.selectFrom('mails').select('id').where('id', '=', old!).executeTakeFirst()).toBeUndefined();
    const deleted = await context.store.db
      .selectFrom('application_events')
      .select('id')
      .where('type', '=', 'mail.deleted')
      .where('mail_id', '=', old!)
      .execute();
    expect(deleted).toEqual([]);
    await context.store.db
      .transaction()
      .execute((trx) => applyTransitions(trx, [dequeueTransition(fresh!, context.clock.now(), 'operator:test')]));
  });
});
