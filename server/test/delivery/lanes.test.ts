/**
 * Lanes (docs/lanes.md): transactional mail is claimed before bulk mail, bulk keeps its share, and the
 * applications of a lane take turns. From the outside: mails submitted through the submission service and over HTTP
 * and SMTP, delivered by a real worker into a real SMTP peer, the order read where the relay received them.
 */
import { MailStatus, type SubmitMailRequest } from '@outbox/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/auth/auth.service.js';
import { auth, getMailDetail, loginAs, type TestContext } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { smtpSessionWithData } from '../support/smtp-session.js';
import { startSmtpIntake, type SmtpIntake } from '../support/smtp-intake.js';
import type { TestRelay } from '../support/test-relay.js';
import { createWorkerHarness, type WorkerHarness } from '../support/worker-harness.js';

let harness: WorkerHarness;
let context: TestContext;
let relay: TestRelay;
let smtp: SmtpIntake | undefined;

beforeEach(async () => {
  harness = await createWorkerHarness();
  ({ context, relay } = harness);
});

afterEach(async () => {
  await smtp?.close();
  smtp = undefined;
  await harness.close();
});

async function application(name: string, lane: 'transactional' | 'bulk'): Promise<{ key: string; principal: ApiKeyPrincipal }> {
  const key = await context.services.auth.createApiKey(name, 'test', { lane });
  return { key, principal: (await context.services.auth.findApiKeyPrincipal(key))! };
}

/** `count` mails from one application, each to a recipient at `<application>.example`, so the relay tells whose it is. */
async function submit(principal: ApiKeyPrincipal, count: number, extra: Partial<SubmitMailRequest> = {}): Promise<number[]> {
  const ids: number[] = [];
  for (let offset = 0; offset < count; offset += 500) {
    const requests = Array.from({ length: Math.min(500, count - offset) }, (_, i) => ({
      fromMail: `noreply@${principal.name}.example`,
      to: [{ recipientMail: `user${offset + i}@${principal.name}.example` }],
      subject: `${principal.name} ${offset + i}`,
      text: 'Hello',
      ...extra,
    }));
    ids.push(...(await context.services.submissions.submitJson(principal, requests, requests.length > 1)).map((m) => m.id));
  }
  return ids;
}

/** Whose mail each message the relay received was, in the order received. */
const receivedFrom = () => relay.received.map((message) => message.rcptTo[0]!.split('@')[1]!.replace('.example', ''));

async function waitForReceived(count: number): Promise<void> {
  await expect.poll(() => relay.received.length, { timeout: 30_000, interval: 20 }).toBeGreaterThanOrEqual(count);
}

/**
 * Where a mail of the worker's first claim can arrive at the relay: a claim takes at most concurrency × 3 mails (12
 * here), sent four at a time in claim order; the relay sees them in the order the sends end, so a mail claimed last
 * in the first claim can arrive after the up to three sends of the next claim that ran beside it (a loaded machine
 * saw position 12). So "in the first claim" is "among the first 12 + 3 arrivals".
 */
const FIRST_CLAIM_ARRIVALS = 4 * 3 + (4 - 1);

describe('lanes', () => {
  it('a transactional mail submitted after a bulk flood is claimed before the flood', async () => {
    const news = await application('news', 'bulk');
    const shop = await application('shop', 'transactional');
    await submit(news.principal, 200);
    await submit(shop.principal, 3);
    harness.startWorker({ concurrency: 4 });
    await waitForReceived(203);
    const order = receivedFrom();
    // Submitted last, received among the first claim's: a claim takes at most concurrency × 3 mails.
    const positions = order.flatMap((who, i) => (who === 'shop' ? [i] : []));
    expect(positions).toHaveLength(3);
    expect(Math.max(...positions)).toBeLessThan(FIRST_CLAIM_ARRIVALS);
  });

  it('bulk keeps its share while transactional mail keeps coming: it is never starved', async () => {
    const shop = await application('shop', 'transactional');
    const news = await application('news', 'bulk');
    await submit(shop.principal, 150);
    await submit(news.principal, 30);
    harness.startWorker({ concurrency: 4 });
    await waitForReceived(180);
    const firstHundred = receivedFrom().slice(0, 100);
    // BULK_SHARE is a fifth of the slots: about 20 of the first 100; transactional-first alone would give none.
    expect(firstHundred.filter((who) => who === 'news').length).toBeGreaterThanOrEqual(10);
    expect(firstHundred.filter((who) => who === 'shop').length).toBeGreaterThanOrEqual(60);
  });

  it("the applications of a lane take turns: one application's flood does not hold back another's mail", async () => {
    const flood = await application('flood', 'transactional');
    const shop = await application('shop', 'transactional');
    await submit(flood.principal, 200);
    await submit(shop.principal, 2);
    harness.startWorker({ concurrency: 4 });
    await waitForReceived(202);
    const positions = receivedFrom().flatMap((who, i) => (who === 'shop' ? [i] : []));
    expect(positions).toHaveLength(2);
    expect(Math.max(...positions)).toBeLessThan(FIRST_CLAIM_ARRIVALS);
  });

  it('a mail may name its own lane, over HTTP and SMTP; the detail shows it; a bad lane is refused naming the field', async () => {
    const shop = await application('shop', 'transactional');
    const operator = await loginAs(context);
    const submitHttp = (body: object) =>
      context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(shop.key), payload: body });
    const base = { fromMail: 'noreply@shop.example', to: [{ recipientMail: 'ann@shop.example' }], subject: 'Spring sale', text: 'Hi' };

    const bulk = await submitHttp({ ...base, lane: 'bulk' });
    expect(bulk.statusCode).toBe(202);
    const bulkId = (bulk.json() as { data: Array<{ id: number }> }).data[0]!.id;
    expect((await getMailDetail(context, operator, bulkId)).lane).toBe('bulk');
    const plain = (await submitHttp(base)).json() as { data: Array<{ id: number }> };
    expect((await getMailDetail(context, operator, plain.data[0]!.id)).lane).toBe('transactional');

    const bad = await submitHttp({ ...base, lane: 'fast' });
    expect(bad.statusCode).toBe(400);
    expect((bad.json() as { error: { message: string } }).error.message).toBe('body.lane must be one of transactional, bulk.');

    smtp = await startSmtpIntake(context, 'smtp-app');
    const id = await smtp.send({
      from: 'noreply@shop.example',
      to: 'bob@shop.example',
      subject: 'Newsletter',
      text: 'Over SMTP',
      headers: { 'X-Outbox-Lane': 'bulk' },
    });
    const detail = await getMailDetail(context, operator, id);
    expect(detail.lane).toBe('bulk');
    expect(detail.headers.map((h) => h.name.toLowerCase())).not.toContain('x-outbox-lane');

    const credentials = Buffer.from(`\0app\0${smtp.apiKey}`).toString('base64');
    const replies = await smtpSessionWithData(
      smtp.port,
      ['EHLO client.example', `AUTH PLAIN ${credentials}`, 'MAIL FROM:<noreply@shop.example>', 'RCPT TO:<bob@shop.example>', 'DATA'],
      'X-Outbox-Lane: fast\r\nSubject: bad lane\r\n\r\nbody\r\n.\r\n',
    );
    expect(replies.some((reply) => reply.startsWith('554 5.6.0 The X-Outbox-Lane header must appear once, as transactional or bulk'))).toBe(
      true,
    );
  });

  it("an application's lane applies to its next mails, and is written to the audit log; a requeued mail keeps its lane", async () => {
    const shop = await application('shop', 'transactional');
    const flood = await application('flood', 'transactional');
    expect(await context.services.auth.setApiKeyLane('shop', 'bulk', 'operator:ops')).toBe('transactional');
    const operator = await loginAs(context);
    const audit = await context.app.inject({ method: 'GET', url: '/api/v1/audit?action=apikey.lane', headers: auth(operator) });
    expect(JSON.stringify(audit.json())).toContain('"lane":"bulk"');

    // The cached principal moved with it: the next mail is bulk.
    const [id] = await submit((await context.services.auth.findApiKeyPrincipal(shop.key))!, 1);
    expect((await getMailDetail(context, operator, id!)).lane).toBe('bulk');

    // Dequeued and requeued behind a transactional flood, it is still bulk: it waits for bulk's share, not its turn.
    const dequeued = await context.app.inject({ method: 'POST', url: `/api/v1/mail/${id}/dequeue`, headers: auth(operator) });
    expect(dequeued.statusCode).toBe(200);
    await submit(flood.principal, 60);
    await context.app.inject({ method: 'POST', url: `/api/v1/mail/${id}/requeue`, headers: auth(operator) });
    expect((await getMailDetail(context, operator, id!)).lane).toBe('bulk');
    harness.startWorker({ concurrency: 4 });
    await waitForReceived(61);
    expect(receivedFrom()).toContain('shop');
    // The relay's 250 comes before the worker writes the outcome: wait for the record to say so.
    await waitUntil(async () => (await getMailDetail(context, operator, id!)).status === MailStatus.ProviderSent, { timeoutMs: 10_000 });
  });
});
