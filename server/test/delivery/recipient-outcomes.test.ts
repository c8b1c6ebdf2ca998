/**
 * Per-recipient outcomes against a real SMTP peer on loopback that answers
 * each RCPT TO as the test decides, with a real store and a ManualClock: a recipient deferred with 4xx while
 * others are accepted is retried alone (same Message-ID and bytes) on the mail's backoff, and the mail ends
 * by the rule of outcome-policy.ts. Checked from the outside: the relay's dialogue, the HTTP list and detail.
 */
import { MailStatus, type Mail, type MailDetail, type SubmitMailRequest } from '@outbox/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/auth/auth.service.js';
import type { DeliveryWorker } from '../../src/delivery/worker.js';
import { auth, getMailDetail, loginAs, type TestContext } from '../support/context.js';
import type { RelayAnswer, TestRelay } from '../support/test-relay.js';
import { createWorkerHarness, MINUTE, type WorkerHarness } from '../support/worker-harness.js';

let harness: WorkerHarness;
let context: TestContext;
let relay: TestRelay;
let principal: ApiKeyPrincipal;
let token: string;

beforeEach(async () => {
  harness = await createWorkerHarness();
  ({ context, relay, principal } = harness);
  token = await loginAs(context);
});

afterEach(() => harness.close());

const startWorker = (maxAttempts: number): DeliveryWorker => harness.startWorker({ retry: { maxAttempts }, concurrency: 4 });

const request: SubmitMailRequest = {
  fromName: 'Shop',
  fromMail: 'shop@example.com',
  to: [
    { recipientName: 'Ann', recipientMail: 'ann@example.net' },
    { recipientName: 'Bob', recipientMail: 'bob@example.net' },
  ],
  cc: [{ recipientName: 'Cy', recipientMail: 'cy@example.net' }],
  bcc: [{ recipientName: 'Di', recipientMail: 'di@example.net' }],
  subject: 'Your order',
  text: 'Thanks!',
};

async function submit(): Promise<number> {
  const [mail] = await context.services.submissions.submitJson(principal, [request], true);
  return mail!.id;
}

const detail = (id: number): Promise<MailDetail> => getMailDetail(context, token, id);

async function listRow(id: number): Promise<Mail> {
  const response = await context.app.inject({ method: 'GET', url: '/api/v1/mail/list', headers: auth(token) });
  expect(response.statusCode).toBe(200);
  return (response.json() as { data: Mail[] }).data.find((m) => m.id === id)!;
}

/** Waits until the mail has `events` events (accepted + one per attempt) and is in `status`. */
async function waitFor(id: number, status: number, events: number): Promise<MailDetail> {
  await expect
    .poll(
      async () => {
        const mail = await detail(id);
        return mail.status === status && mail.events.length === events;
      },
      { timeout: 10_000, interval: 10 },
    )
    .toBe(true);
  return detail(id);
}

const outcomes = (mail: MailDetail) =>
  Object.fromEntries((mail.recipients ?? []).filter((r) => r.kind === 'envelope').map((r) => [r.recipientMail, r.outcome]));

/** The relay's answers by address for each MAIL FROM transaction (0, 1, …); unlisted: accepted. */
function answerRcpt(plan: Array<Record<string, RelayAnswer>>): void {
  relay.rcptAnswer = (address, transaction) => plan[transaction]?.[address] ?? { accept: true };
}

const DEFER = { code: 451, message: '4.7.1 Greylisted, try later' };
const REJECT = { code: 550, message: '5.1.1 No such user' };

describe('per-recipient outcomes', () => {
  it('mixed accept/reject/defer: only the deferred recipients are sent again, with the same bytes; ProviderSent once none is pending', async () => {
    answerRcpt([{ 'bob@example.net': REJECT, 'cy@example.net': DEFER, 'di@example.net': DEFER }, { 'di@example.net': DEFER }]);
    const id = await submit();
    const worker = startWorker(5);

    // Attempt 1: ann accepted, bob refused for good, cy and di deferred → Queued on the backoff.
    let mail = await waitFor(id, MailStatus.Queued, 2);
    expect(outcomes(mail)).toEqual({
      'ann@example.net': 'accepted',
      'bob@example.net': 'rejected',
      'cy@example.net': 'deferred',
      'di@example.net': 'deferred',
    });
    expect(mail.events.at(-1)).toMatchObject({
      type: 'recipients-deferred',
      detail: { pendingRecipients: ['cy@example.net', 'di@example.net'] },
    });
    expect(mail.nextAttemptAt).toBe(new Date(context.clock.now() + MINUTE).toISOString());
    // The header recipients show their envelope address's outcome and the relay's own words.
    const bob = mail.recipients!.find((r) => r.kind === 'to' && r.recipientMail === 'bob@example.net')!;
    expect(bob).toMatchObject({ recipientName: 'Bob', outcome: 'rejected', reply: '550 5.1.1 No such user' });
    expect(mail.recipients!.find((r) => r.kind === 'bcc')).toMatchObject({ recipientMail: 'di@example.net', outcome: 'deferred' });
    expect(await listRow(id)).toMatchObject({ recipientCount: 4, rejectedRecipients: 1 });

    // Attempt 2: only cy and di; cy accepted, di deferred again.
    context.clock.advance(MINUTE);
    worker.wake();
    mail = await waitFor(id, MailStatus.Queued, 3);
    expect(relay.received[1]!.rcptTo).toEqual(['cy@example.net']);
    expect(outcomes(mail)).toMatchObject({ 'cy@example.net': 'accepted', 'di@example.net': 'deferred' });

    // Attempt 3: di alone, accepted → every recipient answered, one at least accepted: ProviderSent.
    context.clock.advance(2 * MINUTE);
    worker.wake();
    mail = await waitFor(id, MailStatus.ProviderSent, 4);
    expect(outcomes(mail)).toEqual({
      'ann@example.net': 'accepted',
      'bob@example.net': 'rejected',
      'cy@example.net': 'accepted',
      'di@example.net': 'accepted',
    });
    expect(mail.events.map((e) => e.type)).toEqual(['accepted', 'recipients-deferred', 'recipients-deferred', 'sent']);
    expect(relay.received.map((m) => m.rcptTo)).toEqual([['ann@example.net'], ['cy@example.net'], ['di@example.net']]);
    const [first, ...later] = relay.received;
    for (const message of later) {
      expect(message.messageId).toBe(first!.messageId);
      expect(message.raw.equals(first!.raw)).toBe(true);
    }
    expect(await listRow(id)).toMatchObject({ status: MailStatus.ProviderSent, recipientCount: 4, rejectedRecipients: 1 });
    console.log(`SMTP dialogue of mail ${id} as the relay saw it:\n${relay.dialogue.join('\n')}`);
  });

  it('every recipient refused for good, at once or after a deferral: ProviderError, nobody pending', async () => {
    answerRcpt([
      { 'ann@example.net': REJECT, 'bob@example.net': REJECT, 'cy@example.net': DEFER, 'di@example.net': REJECT },
      { 'cy@example.net': REJECT },
    ]);
    const id = await submit();
    const worker = startWorker(5);
    let mail = await waitFor(id, MailStatus.Queued, 2);
    expect(mail.events.at(-1)!.type).toBe('recipients-deferred');
    context.clock.advance(MINUTE);
    worker.wake();
    mail = await waitFor(id, MailStatus.ProviderError, 3);
    expect(Object.values(outcomes(mail))).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(relay.dialogue.filter((line) => line.startsWith('C: RCPT')).slice(4)).toEqual(['C: RCPT TO:<cy@example.net>']);
    expect(relay.received).toHaveLength(0);
    expect(await listRow(id)).toMatchObject({ recipientCount: 4, rejectedRecipients: 4 });
  });

  it('a budget that runs out with recipients still deferred: they become rejected ("Gave up …"), ProviderSent since one was accepted', async () => {
    relay.rcptAnswer = (address) => (address === 'di@example.net' ? DEFER : { accept: true });
    const id = await submit();
    const worker = startWorker(2);
    await waitFor(id, MailStatus.Queued, 2);
    context.clock.advance(MINUTE);
    worker.wake();
    const mail = await waitFor(id, MailStatus.ProviderSent, 3);
    const di = mail.recipients!.find((r) => r.kind === 'envelope' && r.recipientMail === 'di@example.net')!;
    expect(di.outcome).toBe('rejected');
    expect(di.reply).toBe('Gave up after 2 attempts: 451 4.7.1 Greylisted, try later');
    expect(mail.events.at(-1)).toMatchObject({ type: 'sent', detail: { gaveUpRecipients: ['di@example.net'] } });
    expect(await listRow(id)).toMatchObject({ recipientCount: 4, rejectedRecipients: 1 });
  });

  it('a budget that runs out with every recipient deferred: ProviderError, all rejected', async () => {
    relay.rcptAnswer = () => DEFER;
    const id = await submit();
    const worker = startWorker(2);
    await waitFor(id, MailStatus.Queued, 2);
    context.clock.advance(MINUTE);
    worker.wake();
    const mail = await waitFor(id, MailStatus.ProviderError, 3);
    expect(mail.events.map((e) => e.type)).toEqual(['accepted', 'deferred-retry', 'deferred-gave-up']);
    expect(Object.values(outcomes(mail))).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
  });

  it('a new mail lists its recipient count and no rejections, and its detail every recipient pending', async () => {
    const id = await submit();
    expect(await listRow(id)).toMatchObject({ recipientCount: 4, rejectedRecipients: 0 });
    const mail = await detail(id);
    expect(mail.recipients!.map((r) => [r.kind, r.recipientMail, r.outcome])).toEqual([
      ['to', 'ann@example.net', 'pending'],
      ['to', 'bob@example.net', 'pending'],
      ['cc', 'cy@example.net', 'pending'],
      ['bcc', 'di@example.net', 'pending'],
      ['envelope', 'ann@example.net', 'pending'],
      ['envelope', 'bob@example.net', 'pending'],
      ['envelope', 'cy@example.net', 'pending'],
      ['envelope', 'di@example.net', 'pending'],
    ]);
  });
});
