/**
 * Scheduled sends (docs/api.md#scheduled-sends): `sendAt` over HTTP and the X-Outbox-Send-At header
 * over SMTP. The mail is Queued and due then, not a moment before; Dequeue cancels it; a requeue restores a schedule
 * still ahead; the retry budget ages from the scheduled instant. From the outside: HTTP through the app, SMTP through
 * the listener, delivery into a real SMTP peer, time on the harness's ManualClock.
 */
import { MailStatus, MAX_SCHEDULE_DAYS, type Mail, type MailDetail, type MailListResponse } from '@outbox/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { auth, getMailDetail, loginAs, type TestContext } from '../support/context.js';
import { smtpSessionWithData } from '../support/smtp-session.js';
import { startSmtpIntake, type SmtpIntake } from '../support/smtp-intake.js';
import type { TestRelay } from '../support/test-relay.js';
import { createWorkerHarness, MINUTE, type WorkerHarness } from '../support/worker-harness.js';

const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

let harness: WorkerHarness;
let context: TestContext;
let relay: TestRelay;
let apiKey: string;
let smtp: SmtpIntake | undefined;

beforeEach(async () => {
  harness = await createWorkerHarness();
  ({ context, relay } = harness);
  apiKey = await context.services.auth.createApiKey('shop');
});

afterEach(async () => {
  await smtp?.close();
  smtp = undefined;
  await harness.close();
});

const at = (offsetMs: number) => new Date(context.clock.now() + offsetMs).toISOString();

function mail(extra: Record<string, unknown> = {}) {
  return { fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'Advent', text: 'Door 24', ...extra };
}

async function submit(body: unknown) {
  return context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(apiKey), payload: body as object });
}

/** The detail through HTTP, as an operator logged in now (the test moves the clock past a session's life). */
const detail = async (id: number): Promise<MailDetail> => getMailDetail(context, await loginAs(context), id);

async function waitForStatus(id: number, status: number): Promise<MailDetail> {
  await expect.poll(async () => (await detail(id)).status, { timeout: 10_000, interval: 10 }).toBe(status);
  return detail(id);
}

/** Gives a running worker a few loops, to show that it leaves a mail that is not due alone. */
async function idleLoops(wake: () => void): Promise<void> {
  for (let i = 0; i < 5; i++) {
    wake();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('scheduled sends over HTTP', () => {
  it('a mail with sendAt waits Queued until then, shows when, and is sent at that instant, not before', async () => {
    const sendAt = at(2 * HOUR);
    const response = await submit(mail({ sendAt }));
    expect(response.statusCode).toBe(202);
    const accepted = (response.json() as { data: Mail[] }).data[0]!;
    expect(accepted).toMatchObject({ status: MailStatus.Queued, sendAt });

    const worker = harness.startWorker();
    await idleLoops(() => worker.wake());
    expect(relay.attempts).toBe(0);
    const waiting = await detail(accepted.id);
    expect(waiting).toMatchObject({ status: MailStatus.Queued, sendAt, nextAttemptAt: sendAt, attempts: 0 });

    // The list shows it too, so the console can mark it scheduled.
    const list = await context.app.inject({ method: 'GET', url: '/api/v1/mail/list?status=0', headers: auth(await loginAs(context)) });
    expect((list.json() as MailListResponse).data.find((m) => m.id === accepted.id)?.sendAt).toBe(sendAt);

    context.clock.advance(2 * HOUR - 1000);
    await idleLoops(() => worker.wake());
    expect(relay.attempts).toBe(0);

    context.clock.advance(1000);
    worker.wake();
    const sent = await waitForStatus(accepted.id, MailStatus.ProviderSent);
    expect(sent.attempts).toBe(1);
    expect(sent.sendAt).toBe(sendAt);
    expect(relay.received).toHaveLength(1);
  });

  it("is not counted in queue health's oldest Queued age until its instant", async () => {
    await submit(mail({ sendAt: at(2 * HOUR) }));
    const health = async () =>
      (
        (await context.app.inject({ method: 'GET', url: '/api/v1/queue/health', headers: auth(await loginAs(context)) })).json() as {
          data: Array<{ oldestQueuedAt: string | null }>;
        }
      ).data[0]!;
    const receivedAt = at(0);
    expect((await health()).oldestQueuedAt).toBeNull();
    context.clock.advance(2 * HOUR);
    expect((await health()).oldestQueuedAt).toBe(receivedAt);
  });

  it('an instant already past sends at once, as an unscheduled mail', async () => {
    const response = await submit(mail({ sendAt: at(-HOUR) }));
    expect(response.statusCode).toBe(202);
    const accepted = (response.json() as { data: Mail[] }).data[0]!;
    expect(accepted.sendAt).toBeNull();
    harness.startWorker();
    await waitForStatus(accepted.id, MailStatus.ProviderSent);
  });

  it(`refuses a sendAt more than ${MAX_SCHEDULE_DAYS} days ahead, or not an ISO 8601 date-time with a zone, naming the field`, async () => {
    const tooFar = await submit(mail({ sendAt: at(MAX_SCHEDULE_DAYS * DAY + MINUTE) }));
    expect(tooFar.statusCode).toBe(400);
    expect(tooFar.json()).toMatchObject({ error: { code: 'invalid_request' } });
    expect((tooFar.json() as { error: { message: string } }).error.message).toMatch(/sendAt is more than 30 days ahead/);

    // The limit itself is accepted.
    expect((await submit(mail({ sendAt: at(MAX_SCHEDULE_DAYS * DAY) }))).statusCode).toBe(202);

    for (const bad of ['tomorrow', '2026-12-24', '2026-12-24T08:00:00', '2026-13-40T99:00:00Z']) {
      const response = await submit(mail({ sendAt: bad }));
      expect(response.statusCode, bad).toBe(400);
      expect((response.json() as { error: { message: string } }).error.message).toMatch(/body\.sendAt must be an ISO 8601 date-time/);
    }

    const batch = await submit([mail(), mail({ sendAt: at(40 * DAY) })]);
    expect(batch.statusCode).toBe(400);
    expect((batch.json() as { error: { message: string } }).error.message).toMatch(/\[1\]\.sendAt is more than 30 days ahead/);
    // All or nothing: the good mail of the refused batch was not stored.
    const list = await context.app.inject({ method: 'GET', url: '/api/v1/mail/list', headers: auth(await loginAs(context)) });
    expect((list.json() as MailListResponse).data).toHaveLength(1);
  });

  it('Dequeue cancels a scheduled mail; a requeue while its instant is still ahead restores the schedule', async () => {
    const sendAt = at(HOUR);
    const { id } = ((await submit(mail({ sendAt }))).json() as { data: Mail[] }).data[0]!;
    const worker = harness.startWorker();

    const dequeued = await context.app.inject({ method: 'POST', url: `/api/v1/mail/${id}/dequeue`, headers: auth(await loginAs(context)) });
    expect(dequeued.statusCode).toBe(200);
    context.clock.advance(10 * MINUTE);
    await idleLoops(() => worker.wake());
    expect((await detail(id)).status).toBe(MailStatus.Dequeued);

    const requeued = await context.app.inject({ method: 'POST', url: `/api/v1/mail/${id}/requeue`, headers: auth(await loginAs(context)) });
    expect(requeued.statusCode).toBe(200);
    await idleLoops(() => worker.wake());
    expect(relay.attempts).toBe(0);
    expect(await detail(id)).toMatchObject({ status: MailStatus.Queued, nextAttemptAt: sendAt });

    context.clock.advance(50 * MINUTE);
    worker.wake();
    await waitForStatus(id, MailStatus.ProviderSent);

    // Dequeued and left: never sent, however late it gets.
    const other = ((await submit(mail({ sendAt: at(HOUR) }))).json() as { data: Mail[] }).data[0]!;
    await context.app.inject({ method: 'POST', url: `/api/v1/mail/${other.id}/dequeue`, headers: auth(await loginAs(context)) });
    context.clock.advance(2 * HOUR);
    await idleLoops(() => worker.wake());
    expect((await detail(other.id)).status).toBe(MailStatus.Dequeued);
    expect(relay.received).toHaveLength(1);
  });

  it("the retry budget's age counts from the scheduled instant: a deferral at the send is retried, not given up", async () => {
    relay.answer = (_message, index) => (index === 0 ? { code: 451, message: '4.7.1 Try later' } : { accept: true });
    const { id } = ((await submit(mail({ sendAt: at(3 * DAY) }))).json() as { data: Mail[] }).data[0]!;
    // A one-day age budget: counted from the receipt, the first retry would lie two days past it.
    const worker = harness.startWorker({ retry: { maxAgeMs: DAY } });
    context.clock.advance(3 * DAY);
    worker.wake();
    // Back in Queued after its first attempt (a claim counts the attempt, so attempts alone would be too early).
    await expect
      .poll(async () => (await detail(id)).events.map((event) => event.type), { timeout: 10_000, interval: 10 })
      .toEqual(['accepted', 'deferred-retry']);
    expect(await detail(id)).toMatchObject({ status: MailStatus.Queued, attempts: 1 });
    context.clock.advance(MINUTE);
    worker.wake();
    await waitForStatus(id, MailStatus.ProviderSent);
  });
});

describe('scheduled sends over SMTP', () => {
  it('X-Outbox-Send-At schedules the mail and is removed from the message; a bad value is refused with 554', async () => {
    smtp = await startSmtpIntake(context, 'smtp-app');
    const sendAt = new Date(context.clock.now() + HOUR);
    const id = await smtp.send({
      from: 'shop@example.com',
      to: 'ann@example.net',
      subject: 'Later',
      text: 'Scheduled over SMTP',
      // RFC 5322 form, as a mail client writes a date.
      headers: { 'X-Outbox-Send-At': sendAt.toUTCString().replace('GMT', '+0000') },
    });
    const waiting = await detail(id);
    expect(waiting).toMatchObject({ status: MailStatus.Queued, sendAt: sendAt.toISOString(), nextAttemptAt: sendAt.toISOString() });
    expect(waiting.headers.map((h) => h.name.toLowerCase())).not.toContain('x-outbox-send-at');

    const worker = harness.startWorker();
    await idleLoops(() => worker.wake());
    expect(relay.attempts).toBe(0);
    context.clock.advance(HOUR);
    worker.wake();
    await waitForStatus(id, MailStatus.ProviderSent);
    expect(relay.received[0]!.raw.toString('latin1')).not.toMatch(/x-outbox-send-at/i);

    const credentials = Buffer.from(`\0app\0${smtp.apiKey}`).toString('base64');
    const replies = await smtpSessionWithData(
      smtp.port,
      ['EHLO client.example', `AUTH PLAIN ${credentials}`, 'MAIL FROM:<shop@example.com>', 'RCPT TO:<ann@example.net>', 'DATA'],
      `X-Outbox-Send-At: ${new Date(context.clock.now() + 40 * DAY).toISOString()}\r\nSubject: too far\r\n\r\nbody\r\n.\r\n`,
    );
    expect(
      replies.some((reply) => /^554 5\.6\.0 The X-Outbox-Send-At header is more than 30 days ahead/.test(reply)),
      replies.join('\n'),
    ).toBe(true);
  });
});
