/**
 * Applications read their own mails through the HTTP API, on a real store (both engines) and a
 * real SMTP peer: an API key reads its mail's status, every recipient's outcome and reply, the attempts and the
 * event log; another key's mail (or a mail no key submitted) answers 404 exactly as an unknown id; the list
 * takes messageId= and idempotencyKey= (operators may use them too), pages by keyset; operator-only calls
 * answer an API key 403 and an unknown token 401.
 */
import { MailStatus, type MailDetailResponse, type MailListResponse, type SubmitMailRequest } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayTransport } from '../../src/delivery/relay-transport.js';
import { createRetryPolicy } from '../../src/delivery/retry-policy.js';
import { createDeliveryWorker } from '../../src/delivery/worker.js';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';
import { waitUntil } from '../support/net.js';
import { startSmtpIntake } from '../support/smtp-intake.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let context: TestContext;
let relay: TestRelay;
let shopKey: string;
let otherKey: string;
let token: string;
/** Mails of `shop`, oldest first: [delivered, with idempotency key, plain, plain]. */
let shopIds: number[];
let otherId: number;
let smtpId: number;
let smtpKey: string;
let operatorsMailId: number;

const mail = (overrides: Partial<SubmitMailRequest> = {}): SubmitMailRequest => ({
  fromMail: 'shop@example.com',
  to: [
    { recipientName: 'Ann', recipientMail: 'ann@example.net' },
    { recipientName: 'Bob', recipientMail: 'bob@example.net' },
  ],
  subject: 'Your order',
  text: 'Thanks!',
  ...overrides,
});

async function submit(key: string, body: SubmitMailRequest): Promise<number> {
  const response = await context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(key), payload: JSON.stringify(body) });
  expect(response.statusCode, response.body).toBe(202);
  return (response.json() as { data: Array<{ id: number }> }).data[0]!.id;
}

const get = (key: string, url: string) => context.app.inject({ method: 'GET', url, headers: auth(key) });

async function list(key: string, query: string): Promise<MailListResponse> {
  const response = await get(key, `/api/v1/mail/list${query}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as MailListResponse;
}

beforeAll(async () => {
  context = await createTestContext();
  relay = await startTestRelay();
  shopKey = await context.services.auth.createApiKey('shop');
  otherKey = await context.services.auth.createApiKey('other');
  token = await loginAs(context);

  // One mail delivered: ann accepted, bob refused for good.
  relay.rcptAnswer = (address) => (address === 'bob@example.net' ? { code: 550, message: '5.1.1 No such user' } : { accept: true });
  const delivered = await submit(shopKey, mail({ subject: 'delivered' }));
  const transport = createRelayTransport(relay.url, { connectionTimeoutMs: 15_000, socketTimeoutMs: 15_000 });
  const worker = createDeliveryWorker({
    store: context.store,
    clock: context.clock,
    transport,
    retryPolicy: createRetryPolicy({ maxAttempts: 3, baseDelayMs: 60_000, jitter: 0 }),
    concurrency: 2,
    leaseMs: 60_000,
    pollIntervalMs: 20,
    flushDelayMs: 1,
  });
  worker.start();
  await waitUntil(
    async () =>
      (await context.store.db.selectFrom('mails').select('status').where('id', '=', delivered).executeTakeFirst())?.status ===
      MailStatus.ProviderSent,
    { timeoutMs: 10_000, what: 'the first mail delivered' },
  );
  await worker.stop({ graceMs: 0 });
  await transport.close();

  shopIds = [
    delivered,
    await submit(shopKey, mail({ subject: 'keyed', idempotencyKey: 'order-42' })),
    await submit(shopKey, mail({ subject: 'plain 1' })),
    await submit(shopKey, mail({ subject: 'plain 2' })),
  ];
  otherId = await submit(otherKey, mail({ subject: "other's", idempotencyKey: 'order-42' }));
  const intake = await startSmtpIntake(context, 'smtp-app');
  smtpKey = intake.apiKey;
  smtpId = await intake.send({ from: 'news@example.com', to: 'eve@example.net', subject: 'over SMTP', text: 'hi' });
  await intake.close();
  operatorsMailId = (await seedMails(context.store, [{ subject: 'no application' }]))[0]!;
});

afterAll(async () => {
  await relay.close();
  await context.close();
});

describe('an API key reads its own mails', () => {
  it("reads its mail's status, every recipient's outcome and reply, the attempts and the event log", async () => {
    const response = await get(shopKey, `/api/v1/mail/${shopIds[0]}`);
    expect(response.statusCode, response.body).toBe(200);
    const detail = (response.json() as MailDetailResponse).data[0]!;
    expect(detail).toMatchObject({ id: shopIds[0], status: MailStatus.ProviderSent, subject: 'delivered', attempts: 1 });
    const envelope = detail.recipients!.filter((r) => r.kind === 'envelope');
    expect(envelope.map((r) => [r.recipientMail, r.outcome])).toEqual([
      ['ann@example.net', 'accepted'],
      ['bob@example.net', 'rejected'],
    ]);
    expect(envelope[1]!.reply).toBe('550 5.1.1 No such user');
    expect(detail.events.map((e) => e.type)).toEqual(['accepted', 'sent']);

    const raw = await get(shopKey, `/api/v1/mail/${shopIds[0]}/raw`);
    expect(raw.statusCode).toBe(200);
    expect(raw.headers['content-type']).toMatch(/^message\/rfc822/);
    expect(raw.body).toContain('Subject: delivered');
  });

  it("answers 404 for another key's mail, a mail no key submitted, and an unknown id alike", async () => {
    const unknown = await get(shopKey, `/api/v1/mail/${operatorsMailId + 1000}`);
    expect(unknown.statusCode).toBe(404);
    for (const [key, id] of [
      [shopKey, otherId],
      [otherKey, shopIds[0]!],
      [shopKey, operatorsMailId],
      [shopKey, smtpId],
    ] as const) {
      for (const path of [`/api/v1/mail/${id}`, `/api/v1/mail/${id}/raw`]) {
        const response = await get(key, path);
        expect(response.statusCode, path).toBe(404);
        expect(response.json()).toEqual({ error: { code: 'mail_not_found', message: `No mail has id ${id}.` } });
      }
    }
    expect(unknown.json()).toEqual({ error: { code: 'mail_not_found', message: `No mail has id ${operatorsMailId + 1000}.` } });
  });

  it('a mail submitted over SMTP remembers its key: that key reads it', async () => {
    const response = await get(smtpKey, `/api/v1/mail/${smtpId}`);
    expect(response.statusCode, response.body).toBe(200);
    expect((await list(smtpKey, '')).data.map((m) => m.id)).toEqual([smtpId]);
  });

  it('lists only its own mails, newest first, by keyset pages of at most 100', async () => {
    const all = await list(shopKey, '');
    expect(all.data.map((m) => m.id)).toEqual([...shopIds].reverse());
    expect(all.meta).toMatchObject({ total: 4, totalIsEstimate: false, nextCursor: null, counts: {} });

    const first = await list(shopKey, '?limit=3');
    expect(first.data.map((m) => m.id)).toEqual(shopIds.slice(1).reverse());
    expect(first.meta.nextCursor).not.toBeNull();
    const second = await list(shopKey, `?limit=3&cursor=${first.meta.nextCursor}`);
    expect(second.data.map((m) => m.id)).toEqual([shopIds[0]]);
    expect(second.meta.nextCursor).toBeNull();

    expect((await list(shopKey, `?status=${MailStatus.ProviderSent}`)).data.map((m) => m.id)).toEqual([shopIds[0]]);
    expect((await list(otherKey, '')).data.map((m) => m.id)).toEqual([otherId]);
  });

  it('finds its mail by messageId and by idempotencyKey, never another key’s', async () => {
    const detail = (await get(shopKey, `/api/v1/mail/${shopIds[2]}`)).json() as MailDetailResponse;
    const messageId = detail.data[0]!.messageId;
    const byMessageId = await list(shopKey, `?messageId=${encodeURIComponent(messageId)}`);
    expect(byMessageId.data.map((m) => m.id)).toEqual([shopIds[2]]);
    expect(byMessageId.meta.total).toBe(1);
    expect((await list(otherKey, `?messageId=${encodeURIComponent(messageId)}`)).data).toEqual([]);

    expect((await list(shopKey, '?idempotencyKey=order-42')).data.map((m) => m.id)).toEqual([shopIds[1]]);
    expect((await list(otherKey, '?idempotencyKey=order-42')).data.map((m) => m.id)).toEqual([otherId]);
    expect((await list(shopKey, '?idempotencyKey=nothing')).data).toEqual([]);
  });

  it('refuses what the operators’ list takes, a limit over 100 and a foreign cursor, naming the field', async () => {
    for (const [query, field] of [
      ['?q=order', 'query.q'],
      ['?sort=subject', 'query.sort'],
      ['?receivedFrom=2026-01-01T00:00:00Z', 'query.receivedFrom'],
      ['?limit=101', 'query.limit'],
      ['?cursor=bm90LWEtY3Vyc29y', 'query.cursor'],
    ]) {
      const response = await get(shopKey, `/api/v1/mail/list${query}`);
      expect(response.statusCode, query).toBe(400);
      expect((response.json() as { error: { message: string } }).error.message, query).toContain(field);
    }
  });
});

describe('operators and the exact lookups', () => {
  it('an operator finds mails of every key by idempotencyKey and messageId, with the store counters', async () => {
    const byKey = await list(token, '?idempotencyKey=order-42');
    expect(byKey.data.map((m) => m.id)).toEqual([otherId, shopIds[1]]);
    expect(byKey.meta.total).toBe(2);
    expect(Object.values(byKey.meta.counts).reduce((a, b) => a + b, 0)).toBe(7);
    const detail = (await get(token, `/api/v1/mail/${otherId}`)).json() as MailDetailResponse;
    expect((await list(token, `?messageId=${encodeURIComponent(detail.data[0]!.messageId)}`)).data.map((m) => m.id)).toEqual([otherId]);
    // The operators' list without them is unchanged: every mail.
    expect((await list(token, '')).data).toHaveLength(7);
    const combined = await get(token, '/api/v1/mail/list?idempotencyKey=order-42&q=order');
    expect(combined.statusCode).toBe(400);
    expect(combined.body).toContain('query.q');
  });
});

describe('operator-only calls', () => {
  it('answer an API key 403 operator_only, and an unknown or missing token 401', async () => {
    const id = shopIds[3]!;
    const calls: Array<{ method: 'GET' | 'POST' | 'DELETE'; url: string; payload?: unknown }> = [
      { method: 'POST', url: `/api/v1/mail/${id}/dequeue` },
      { method: 'GET', url: `/api/v1/mail/${id}/dequeue` },
      { method: 'POST', url: `/api/v1/mail/${id}/requeue` },
      { method: 'DELETE', url: `/api/v1/mail/${id}` },
      { method: 'POST', url: '/api/v1/mail/bulk', payload: { action: 'dequeue', ids: [id] } },
      { method: 'GET', url: '/api/v1/audit' },
      { method: 'GET', url: '/api/v1/queue/health' },
      { method: 'GET', url: '/api/v1/events' },
      { method: 'POST', url: '/api/v1/logout' },
    ];
    for (const call of calls) {
      const request = { method: call.method, url: call.url, ...(call.payload ? { payload: JSON.stringify(call.payload) } : {}) };
      const asKey = await context.app.inject({ ...request, headers: auth(shopKey) });
      expect(asKey.statusCode, `${call.method} ${call.url}`).toBe(403);
      expect((asKey.json() as { error: { code: string } }).error.code).toBe('operator_only');
      const unknown = await context.app.inject({ ...request, headers: auth('not-a-token') });
      expect(unknown.statusCode, `${call.method} ${call.url}`).toBe(401);
      expect((unknown.json() as { error: { code: string } }).error.code).toBe('invalid_token');
    }
    const missing = await context.app.inject({ method: 'GET', url: '/api/v1/mail/list' });
    expect(missing.statusCode).toBe(401);
    expect((missing.json() as { error: { code: string } }).error.code).toBe('missing_token');
    // Nothing moved.
    expect((await list(shopKey, `?status=${MailStatus.Queued}`)).data.map((m) => m.id)).toContain(id);
  });
});
