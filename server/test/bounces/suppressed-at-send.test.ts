/**
 * The worker checks the suppression list before each send (docs/lifecycle.md): an address suppressed after its
 * mail was accepted is not sent to when the mail is retried or requeued, whatever put it on the list: a hard
 * bounce, a complaint or an operator. Outbox started as `npm start` starts it with BOUNCE_DOMAIN and a real relay;
 * each mail is first refused by the relay (550 5.7.1 at RCPT, which suppresses nothing: ProviderError), its address is then suppressed, and an
 * operator's requeue must not reach the relay again.
 */
import { MailStatus } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { arf, dsn, sendSmtp, startBounceOutbox, type BounceOutbox } from './bounce-support.js';

let relay: TestRelay;
let outbox: BounceOutbox;
/** Addresses the relay refuses at RCPT. */
const refused = new Set<string>();

beforeAll(async () => {
  relay = await startTestRelay();
  relay.rcptAnswer = (address) => (refused.has(address) ? { code: 550, message: '5.7.1 Rejected by policy' } : { accept: true });
  outbox = await startBounceOutbox({ RELAY_URL: relay.url });
});

afterAll(async () => {
  await outbox?.stop();
  await relay?.close();
});

async function call(method: 'POST', url: string, payload?: unknown) {
  const response = await outbox.running.app.inject({
    method,
    url,
    headers: { authorization: `Token ${outbox.token}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
    ...(payload ? { payload: JSON.stringify(payload) } : {}),
  });
  return { status: response.statusCode, body: response.json() as Record<string, unknown> };
}

/** A mail to `address` the relay refused: ProviderError, the address reached the relay's RCPT once. */
async function refusedMail(address: string): Promise<number> {
  refused.add(address);
  const id = await outbox.submit([address]);
  await outbox.waitForStatus(id, MailStatus.ProviderError);
  refused.delete(address);
  return id;
}

/** A mail to `address` the relay took, and its return path. */
async function deliveredMail(address: string): Promise<{ id: number; returnPath: string }> {
  const id = await outbox.submit([address]);
  await outbox.waitForStatus(id, MailStatus.ProviderSent);
  return { id, returnPath: await outbox.returnPathOf(id) };
}

const rcptsTo = (address: string) => relay.dialogue.filter((line) => line === `C: RCPT TO:<${address}>`).length;

/** Requeues the refused mail once its address is suppressed: it ends Error, the relay never sees the address again. */
async function expectNotSentOnRequeue(id: number, address: string, reason: string): Promise<void> {
  const before = rcptsTo(address);
  expect((await call('POST', `/api/v1/mail/${id}/requeue`)).status).toBe(200);
  await outbox.waitForStatus(id, MailStatus.Error, `mail ${id} Error (every recipient suppressed)`);
  expect(rcptsTo(address)).toBe(before);
  const detail = await outbox.detail(id);
  const recipient = detail.recipients!.find((r) => r.recipientMail === address && r.outcome !== null)!;
  expect(recipient.outcome).toBe('suppressed');
  expect(recipient.reply).toContain(`(${reason})`);
  expect(detail.events.at(-1)!.type).toBe('suppressed');
}

describe('a recipient suppressed after its mail was accepted is not sent to', () => {
  it('suppressed by an operator', async () => {
    const address = 'by-operator@example.net';
    const id = await refusedMail(address);
    expect((await call('POST', '/api/v1/suppressions', { address })).status).toBe(201);
    await expectNotSentOnRequeue(id, address, 'manual');
  });

  it('suppressed by a hard bounce of another mail', async () => {
    const address = 'by-bounce@example.net';
    const id = await refusedMail(address);
    const other = await deliveredMail(address);
    const report = dsn({ returnPath: other.returnPath, recipients: [{ address, action: 'failed', status: '5.1.1' }] });
    expect((await sendSmtp(outbox.bouncePort, { from: '', to: [other.returnPath], raw: report })).last).toMatch(/^250 /);
    await expectNotSentOnRequeue(id, address, 'hard_bounce');
  });

  it('suppressed by a complaint about another mail', async () => {
    const address = 'by-complaint@example.net';
    const id = await refusedMail(address);
    const other = await deliveredMail(address);
    const report = arf({ returnPath: other.returnPath, recipient: address });
    expect((await sendSmtp(outbox.bouncePort, { from: '', to: [other.returnPath], raw: report })).last).toMatch(/^250 /);
    await expectNotSentOnRequeue(id, address, 'complaint');
  });

  it('a mail to a suppressed and a deliverable recipient goes to the deliverable one alone and ends ProviderSent', async () => {
    const [gone, stays] = ['partly-gone@example.net', 'partly-stays@example.net'];
    refused.add(gone);
    refused.add(stays);
    const id = await outbox.submit([gone, stays]);
    await outbox.waitForStatus(id, MailStatus.ProviderError);
    refused.clear();
    expect((await call('POST', '/api/v1/suppressions', { address: gone })).status).toBe(201);
    const before = rcptsTo(gone);
    expect((await call('POST', `/api/v1/mail/${id}/requeue`)).status).toBe(200);
    await outbox.waitForStatus(id, MailStatus.ProviderSent);
    expect(rcptsTo(gone)).toBe(before);
    const outcomes = Object.fromEntries(
      (await outbox.detail(id)).recipients!.filter((r) => r.outcome !== null).map((r) => [r.recipientMail, r.outcome]),
    );
    expect(outcomes).toEqual({ [gone]: 'suppressed', [stays]: 'accepted' });
  });
});
