/**
 * Routes, failover and rate limits in the worker (docs/relays.md), from the
 * outside: relays and routes set through the HTTP API, mails submitted through the submission service, delivered
 * by a real worker into real SMTP peers on loopback; where each mail went is read where the peers received it and
 * in the mail's events.
 */
import { MailStatus, type MailDetail, type SubmitMailRequest } from '@outbox/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/auth/auth.service.js';
import { auth, getMailDetail, loginAs, type TestContext } from '../support/context.js';
import { closedPort } from '../support/net.js';
import { createRelayFixture } from '../support/relay-fixture.js';
import type { TestRelay } from '../support/test-relay.js';
import { createWorkerHarness, type WorkerHarness } from '../support/worker-harness.js';

// First, so that its peers close after the harness's worker that sends to them has stopped.
const fixture = createRelayFixture();
const peer = fixture.startPeer;
let harness: WorkerHarness;
let context: TestContext;
let token: string;

beforeEach(async () => {
  harness = await createWorkerHarness();
  context = harness.context;
  token = await loginAs(context);
});

afterEach(async () => {
  await harness.close();
});

async function addRelay(name: string, url: string, extra: object = {}): Promise<number> {
  const response = await context.app.inject({
    method: 'POST',
    url: '/api/v1/relays',
    headers: auth(token),
    payload: { name, url, tls: 'opportunistic', ...extra },
  });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { data: Array<{ id: number }> }).data[0]!.id;
}

async function putRoutes(routes: object[]): Promise<void> {
  const response = await context.app.inject({ method: 'PUT', url: '/api/v1/routes', headers: auth(token), payload: { routes } });
  expect(response.statusCode, response.body).toBe(200);
}

/** `primary` on a port nothing listens on, then `backup` on a peer: the route of every mail, in that order. */
async function routeToUnreachablePrimary(): Promise<{ port: number; backup: TestRelay }> {
  const port = await closedPort();
  const backup = await peer();
  await addRelay('primary', `smtp://127.0.0.1:${port}`);
  await addRelay('backup', backup.url);
  await putRoutes([{ match: {}, relays: ['primary', 'backup'] }]);
  return { port, backup };
}

async function application(name: string): Promise<ApiKeyPrincipal> {
  const key = await context.services.auth.createApiKey(name, 'test');
  return (await context.services.auth.findApiKeyPrincipal(key))!;
}

async function submit(
  principal: ApiKeyPrincipal,
  mail: Partial<Omit<SubmitMailRequest, 'to'>> & { to: string; subject: string },
): Promise<number> {
  const { to, ...rest } = mail;
  const [created] = await context.services.submissions.submitJson(
    principal,
    [{ fromMail: 'noreply@shop.example', text: 'Hello', ...rest, to: [{ recipientMail: to }] }],
    false,
  );
  return created!.id;
}

async function sentDetail(id: number): Promise<MailDetail> {
  let detail: MailDetail | undefined;
  await expect
    .poll(
      async () => {
        detail = await getMailDetail(context, token, id);
        return detail.status;
      },
      { timeout: 60_000, interval: 50 },
    )
    .toBe(MailStatus.ProviderSent);
  return detail!;
}

const subjects = (relay: TestRelay) => relay.received.map((m) => /^subject:\s*(.+)$/im.exec(m.raw.toString())?.[1]?.trim()).sort();
const relayOfEvent = (detail: MailDetail) => detail.events.find((e) => e.type === 'sent')?.detail?.relay;

describe('routes', () => {
  it('pick the relay by application, sender domain, recipient domain (wildcard) and lane; the first match wins; else the default relay', async () => {
    const [news, billing, germany, bulk] = [await peer(), await peer(), await peer(), await peer()];
    await addRelay('news', news.url);
    await addRelay('billing', billing.url);
    await addRelay('germany', germany.url);
    await addRelay('bulk', bulk.url);
    const newsApp = await application('newsletter');
    const shop = await application('shop');
    await putRoutes([
      { match: { application: newsApp.id }, relays: ['news'] },
      { match: { senderDomain: 'billing.shop.example' }, relays: ['billing'] },
      { match: { recipientDomain: '*.de' }, relays: ['germany'] },
      { match: { lane: 'bulk' }, relays: ['bulk'] },
    ]);
    const ids = {
      news: await submit(newsApp, { to: 'ann@mail.de', subject: 'news to de' }),
      billing: await submit(shop, { fromMail: 'invoices@billing.shop.example', to: 'bob@mail.de', subject: 'invoice to de' }),
      germany: await submit(shop, { to: 'carl@post.example.de', subject: 'order to de' }),
      // Not a subdomain of .de: *.de matches subdomains only.
      bulk: await submit(shop, { to: 'dora@example.com', subject: 'sale', lane: 'bulk' }),
      plain: await submit(shop, { to: 'eve@example.com', subject: 'receipt' }),
    };
    harness.startWorker();
    const details = Object.fromEntries(await Promise.all(Object.entries(ids).map(async ([k, id]) => [k, await sentDetail(id)] as const)));
    expect(subjects(news)).toEqual(['news to de']);
    expect(subjects(billing)).toEqual(['invoice to de']);
    expect(subjects(germany)).toEqual(['order to de']);
    expect(subjects(bulk)).toEqual(['sale']);
    expect(subjects(harness.relay)).toEqual(['receipt']);
    // The events say which relay took each.
    expect(relayOfEvent(details.news!)).toBe('news');
    expect(relayOfEvent(details.billing!)).toBe('billing');
    expect(relayOfEvent(details.germany!)).toBe('germany');
    expect(relayOfEvent(details.bulk!)).toBe('bulk');
    expect(relayOfEvent(details.plain!)).toBe('default');
  });

  it('without routes every mail goes to the default relay as before, and its events name no relay', async () => {
    const unused = await peer();
    await addRelay('unused', unused.url);
    const shop = await application('shop');
    const id = await submit(shop, { to: 'ann@example.com', subject: 'plain' });
    harness.startWorker();
    const detail = await sentDetail(id);
    expect(subjects(harness.relay)).toEqual(['plain']);
    expect(unused.received).toHaveLength(0);
    expect(relayOfEvent(detail)).toBeUndefined();
  });
});

describe('failover', () => {
  it('a primary that cannot be reached: every mail goes through the fallback at once, none twice, no attempt spent; traffic returns once the primary is back', async () => {
    const { port, backup } = await routeToUnreachablePrimary();
    const shop = await application('shop');
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) ids.push(await submit(shop, { to: `user${i}@example.com`, subject: `mail ${i}` }));
    // One attempt each: a failover spending the budget would give up on the third.
    harness.startWorker({ retry: { maxAttempts: 1 } });
    const details = await Promise.all(ids.map((id) => sentDetail(id)));
    expect(backup.received).toHaveLength(20);
    expect(new Set(backup.received.map((m) => m.messageId)).size).toBe(20);
    for (const detail of details) {
      expect(detail.attempts).toBe(1);
      expect(relayOfEvent(detail)).toBe('backup');
    }
    // The first mails found the primary down on their way; the event says so.
    const passed = details.flatMap((d) => (d.events.find((e) => e.type === 'sent')?.detail?.passedOver as Array<{ relay: string }>) ?? []);
    expect(passed.length).toBeGreaterThan(0);
    expect(passed.every((p) => p.relay === 'primary')).toBe(true);
    expect(harness.relay.received).toHaveLength(0);

    // The primary comes back on its port: after a probe it takes the mail again.
    const primary = await peer(port);
    const later: number[] = [];
    await expect
      .poll(
        async () => {
          later.push(await submit(shop, { to: 'late@example.com', subject: `late ${later.length}` }));
          return primary.received.length;
        },
        { timeout: 90_000, interval: 500 },
      )
      .toBeGreaterThan(0);
    await Promise.all(later.map((id) => sentDetail(id)));
    const after = [];
    for (let i = 0; i < 5; i++) after.push(await submit(shop, { to: `back${i}@example.com`, subject: `back ${i}` }));
    const backDetails = await Promise.all(after.map((id) => sentDetail(id)));
    expect(backDetails.map(relayOfEvent)).toEqual(['primary', 'primary', 'primary', 'primary', 'primary']);
    // Nothing reached two relays.
    const everywhere = [...backup.received, ...primary.received].map((m) => m.messageId);
    expect(new Set(everywhere).size).toBe(everywhere.length);
    expect(everywhere).toHaveLength(20 + later.length + 5);
  });
});

describe('failover with one envelope per recipient', () => {
  it('each recipient’s envelope fails over on its own: every one reaches the fallback once, with its return path', async () => {
    const { backup } = await routeToUnreachablePrimary();
    const shop = await application('shop');
    const [created] = await context.services.submissions.submitJson(
      shop,
      [
        {
          fromMail: 'noreply@shop.example',
          to: [{ recipientMail: 'ann@example.com' }, { recipientMail: 'bob@example.net' }, { recipientMail: 'cy@example.org' }],
          subject: 'three',
          text: 'Hello',
        },
      ],
      false,
    );
    harness.startWorker({ retry: { maxAttempts: 1 }, returnPath: (mailId, recipient) => `b-${mailId}-${recipient}@bounces.example` });
    const detail = await sentDetail(created!.id);
    expect(detail.attempts).toBe(1);
    expect(relayOfEvent(detail)).toBe('backup');
    expect(backup.received.map((m) => `${m.mailFrom} ${m.rcptTo.join(',')}`).sort()).toEqual([
      `b-${created!.id}-0@bounces.example ann@example.com`,
      `b-${created!.id}-1@bounces.example bob@example.net`,
      `b-${created!.id}-2@bounces.example cy@example.org`,
    ]);
    expect(detail.recipients!.filter((r) => r.kind === 'envelope').map((r) => r.outcome)).toEqual(['accepted', 'accepted', 'accepted']);
  });
});

describe('rate limit', () => {
  it('maxPerSecond spaces the relay’s messages: N mails at R a second take at least (N−1)/R seconds', async () => {
    const paced = await peer();
    await addRelay('paced', paced.url, { maxPerSecond: 4 });
    await putRoutes([{ match: {}, relays: ['paced'] }]);
    const shop = await application('shop');
    const ids: number[] = [];
    for (let i = 0; i < 9; i++) ids.push(await submit(shop, { to: `user${i}@example.com`, subject: `paced ${i}` }));
    const started = performance.now();
    harness.startWorker({ concurrency: 10 });
    await Promise.all(ids.map((id) => sentDetail(id)));
    const elapsed = performance.now() - started;
    expect(paced.received).toHaveLength(9);
    // Unpaced, nine mails to a loopback peer take a few hundred milliseconds.
    expect(elapsed).toBeGreaterThanOrEqual(((9 - 1) / 4) * 1000);
  });
});
