/**
 * Suppressed recipients at submission and the relay's "no such address" at RCPT, end to end on a real store with
 * a real SMTP peer on loopback and a running worker: a suppressed recipient is accepted, named in the 202, never
 * given to the relay, stored with outcome `suppressed` and told by a `mail.suppressed` event; a mail with every
 * recipient suppressed is Error at once and the relay never hears of it; a 5.1.1 refusal at RCPT suppresses.
 */
import { MailStatus, type Mail, type MailDetail, type SubmitMailRequest, type SuppressionListResponse } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/auth/auth.service.js';
import { createRelayTransport, type RelayTransport } from '../../src/delivery/relay-transport.js';
import { createRetryPolicy } from '../../src/delivery/retry-policy.js';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/delivery/worker.js';
import { listMailApplicationEvents } from '../../src/events/application-events.repository.js';
import { auth, createTestContext, getMailDetail, loginAs, type TestContext } from '../support/context.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let context: TestContext;
let relay: TestRelay;
let principal: ApiKeyPrincipal;
let apiKey: string;
let token: string;
let transport: RelayTransport;
let worker: DeliveryWorker;
const MINUTE = 60_000;

beforeAll(async () => {
  context = await createTestContext();
  relay = await startTestRelay();
  apiKey = await context.services.auth.createApiKey('shop');
  principal = (await context.services.auth.findApiKeyPrincipal(apiKey))!;
  token = await loginAs(context);
  // Generous, as the worker harness's: on a loaded machine (a full run, load ~17) a send that timed out at 2 s went back to
  // Queued with its retry a minute ahead on the test's clock, which never gets there, and the mail stayed Queued.
  transport = createRelayTransport(relay.url, { connectionTimeoutMs: 15_000, socketTimeoutMs: 15_000 });
  worker = createDeliveryWorker({
    store: context.store,
    clock: context.clock,
    transport,
    retryPolicy: createRetryPolicy({ maxAttempts: 3, baseDelayMs: MINUTE, jitter: 0, maxAgeMs: 24 * 60 * MINUTE }),
    concurrency: 2,
    leaseMs: MINUTE,
    pollIntervalMs: 20,
    flushDelayMs: 1,
  });
  worker.start();
});

afterAll(async () => {
  await worker.stop({ graceMs: 0 });
  await transport.close();
  await relay.close();
  await context.close();
});

const mailTo = (...addresses: string[]): SubmitMailRequest => ({
  fromMail: 'shop@example.com',
  to: addresses.map((recipientMail) => ({ recipientMail })),
  subject: 'Your order',
  text: 'Thanks!',
});

async function submitHttp(body: unknown, headers: Record<string, string> = {}): Promise<Mail[]> {
  const response = await context.app.inject({
    method: 'POST',
    url: '/api/v1/mail',
    headers: { ...auth(apiKey), ...headers },
    payload: JSON.stringify(body),
  });
  expect(response.statusCode, response.body).toBe(202);
  return (response.json() as { data: Mail[] }).data;
}

async function suppress(address: string): Promise<void> {
  const response = await context.app.inject({
    method: 'POST',
    url: '/api/v1/suppressions',
    headers: auth(token),
    payload: JSON.stringify({ address }),
  });
  expect(response.statusCode, response.body).toBeLessThan(300);
}

async function waitForStatus(id: number, status: number): Promise<MailDetail> {
  // How long delivery may take on a loaded machine, not what is proved.
  await expect.poll(async () => (await getMailDetail(context, token, id)).status, { timeout: 30_000, interval: 10 }).toBe(status);
  return getMailDetail(context, token, id);
}

const outcomes = (mail: MailDetail) =>
  Object.fromEntries((mail.recipients ?? []).filter((r) => r.kind === 'envelope').map((r) => [r.recipientMail, r.outcome]));
const rcpts = () => relay.dialogue.filter((line) => line.startsWith('C: RCPT TO:'));

describe('suppressed recipients', () => {
  it('one suppressed recipient: named in the 202, never given to the relay, outcome suppressed, mail.suppressed written', async () => {
    await suppress('Ann@Example.net');
    const [mail] = await submitHttp(mailTo('ann@example.net', 'bob@example.net'));
    expect(mail).toMatchObject({ status: MailStatus.Queued, suppressedRecipients: ['ann@example.net'] });

    const sent = await waitForStatus(mail!.id, MailStatus.ProviderSent);
    expect(outcomes(sent)).toEqual({ 'ann@example.net': 'suppressed', 'bob@example.net': 'accepted' });
    expect(rcpts()).toContain('C: RCPT TO:<bob@example.net>');
    expect(rcpts()).not.toContain('C: RCPT TO:<ann@example.net>');
    expect(relay.received.at(-1)!.rcptTo).toEqual(['bob@example.net']);

    const events = await listMailApplicationEvents(context.store.db, mail!.id);
    expect(events.map((e) => [e.type, Number(e.mail_seq)])).toEqual([
      ['mail.queued', 1],
      ['mail.suppressed', 2],
      ['mail.sent', 3],
    ]);
    expect(JSON.parse(events[1]!.payload)).toMatchObject({ mailId: mail!.id, suppressed: ['ann@example.net'], status: 'Queued' });
  });

  it('every recipient suppressed: Error at once with the reason in its event log, the relay never contacted', async () => {
    await suppress('cy@example.net');
    const before = relay.transactions;
    const [mail] = await submitHttp(mailTo('ann@example.net', 'CY@example.net'));
    expect(mail).toMatchObject({ status: MailStatus.Error, suppressedRecipients: ['ann@example.net', 'CY@example.net'] });
    const stored = await getMailDetail(context, token, mail!.id);
    expect(stored.status).toBe(MailStatus.Error);
    expect(stored.events.map((e) => e.type)).toEqual(['suppressed']);
    expect(stored.events[0]!.detail).toMatchObject({ suppressed: ['ann@example.net', 'CY@example.net'] });
    expect(Object.values(outcomes(stored))).toEqual(['suppressed', 'suppressed']);
    const events = await listMailApplicationEvents(context.store.db, mail!.id);
    expect(events.map((e) => e.type)).toEqual(['mail.suppressed']);
    expect(JSON.parse(events[0]!.payload)).toMatchObject({ status: 'Error' });

    // A mail after it is sent: the worker has looked at the queue since, and still never gave the first to the relay.
    const [next] = await submitHttp(mailTo('dan@example.net'));
    await waitForStatus(next!.id, MailStatus.ProviderSent);
    expect(relay.transactions).toBe(before + 1);
    expect(relay.received.at(-1)!.rcptTo).toEqual(['dan@example.net']);
  });

  it('a batch and an SMTP submission are checked the same way', async () => {
    await suppress('ann@example.net');
    const batch = await submitHttp([mailTo('ann@example.net', 'eve@example.net'), mailTo('fay@example.net')]);
    expect(batch[0]).toMatchObject({ status: MailStatus.Queued, suppressedRecipients: ['ann@example.net'] });
    expect(batch[1]!.suppressedRecipients).toBeUndefined();
    // The short answer (docs/api.md, Prefer: return=minimal) still names them.
    const short = await submitHttp([mailTo('ann@example.net', 'hal@example.net'), mailTo('ann@example.net')], { prefer: 'return=minimal' });
    expect(short.map(({ id: _id, ...rest }) => rest)).toEqual([
      { status: MailStatus.Queued, suppressedRecipients: ['ann@example.net'] },
      { status: MailStatus.Error, suppressedRecipients: ['ann@example.net'] },
    ]);

    const raw = Buffer.from(
      'From: shop@example.com\r\nTo: ann@example.net\r\nSubject: hi\r\nMessage-ID: <s1@example.com>\r\n\r\nHello\r\n',
    );
    const viaSmtp = await context.services.submissions.submitRaw(principal, {
      envelopeFrom: 'shop@example.com',
      envelopeTo: ['ann@example.net', 'gil@example.net'],
      raw,
      messageId: '<s1@example.com>',
    });
    expect(viaSmtp.suppressedRecipients).toEqual(['ann@example.net']);
    const sent = await waitForStatus(viaSmtp.id, MailStatus.ProviderSent);
    expect(outcomes(sent)).toEqual({ 'ann@example.net': 'suppressed', 'gil@example.net': 'accepted' });
    // The batch's mails may be sent in any order: the one for gil is found by its recipients.
    expect(relay.received.filter((m) => m.rcptTo.includes('gil@example.net')).map((m) => m.rcptTo)).toEqual([['gil@example.net']]);
    expect(relay.received.filter((m) => m.rcptTo.includes('ann@example.net'))).toEqual([]);
  });

  it('an expired or removed entry no longer suppresses', async () => {
    const response = await context.app.inject({
      method: 'POST',
      url: '/api/v1/suppressions',
      headers: auth(token),
      payload: JSON.stringify({ address: 'hal@example.net', expiresAt: new Date(context.clock.now() + MINUTE).toISOString() }),
    });
    expect(response.statusCode).toBe(201);
    expect((await submitHttp(mailTo('hal@example.net')))[0]!.status).toBe(MailStatus.Error);
    context.clock.advance(2 * MINUTE);
    const [later] = await submitHttp(mailTo('hal@example.net'));
    expect(later!.suppressedRecipients).toBeUndefined();
    await waitForStatus(later!.id, MailStatus.ProviderSent);
  });

  it('a relay refusal at RCPT saying the address does not exist suppresses it with the mail; another refusal does not', async () => {
    relay.rcptAnswer = (address) =>
      address === 'gone@example.net'
        ? { code: 550, message: '5.1.1 <gone@example.net>: Recipient address rejected: User unknown' }
        : address === 'full@example.net'
          ? { code: 552, message: '5.2.2 Mailbox full' }
          : { accept: true };
    const [mail] = await submitHttp(mailTo('gone@example.net', 'full@example.net', 'ivy@example.net'));
    const done = await waitForStatus(mail!.id, MailStatus.ProviderSent);
    expect(outcomes(done)).toMatchObject({ 'gone@example.net': 'rejected', 'full@example.net': 'rejected' });

    const list = await context.app.inject({ method: 'GET', url: '/api/v1/suppressions?q=example.net', headers: auth(token) });
    const entries = (list.json() as SuppressionListResponse).data;
    expect(entries.find((s) => s.address === 'gone@example.net')).toMatchObject({
      reason: 'rcpt_refused',
      mailId: mail!.id,
      detail: expect.stringContaining('5.1.1') as unknown as string,
      createdBy: expect.stringMatching(/^worker:/) as unknown as string,
    });
    expect(entries.find((s) => s.address === 'full@example.net')).toBeUndefined();

    // A refusal of the whole message after DATA does not say which recipient is unknown: nobody is suppressed.
    relay.rcptAnswer = () => ({ accept: true });
    relay.answer = () => ({ code: 550, message: '5.1.1 one of the recipients is unknown' });
    const [whole] = await submitHttp(mailTo('jo@example.net', 'kim@example.net'));
    await waitForStatus(whole!.id, MailStatus.ProviderError);
    relay.answer = () => ({ accept: true });
    const after = await context.app.inject({ method: 'GET', url: '/api/v1/suppressions?q=example.net', headers: auth(token) });
    expect((after.json() as SuppressionListResponse).data.map((s) => s.address)).not.toContain('jo@example.net');

    // The next mail to it is not sent to it.
    const [next] = await submitHttp(mailTo('gone@example.net'));
    expect(next).toMatchObject({ status: MailStatus.Error, suppressedRecipients: ['gone@example.net'] });
  });
});
