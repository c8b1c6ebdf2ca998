/**
 * The Postfix proof (docs/bounces.md#a-postfix-example): a real Postfix is Outbox's relay. It accepts a
 * mail for user@dead.test (250: ProviderSent), then its `error:` transport refuses it and Postfix sends its own
 * DSN to the return path, which its transport map routes to Outbox's bounce listener. The mail turns
 * ProviderError with the recipient bounced and Postfix's diagnostic, and the address is suppressed.
 * Skipped with a message where Postfix is missing (or not startable without root); in CI (CI=true) that fails.
 */
import { MailStatus, type BouncesResponse } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suppressedAmong } from '../../src/suppression/suppression.repository.js';
import { freePort, waitUntil } from '../support/net.js';
import { startBounceOutbox, type BounceOutbox } from './bounce-support.js';
import { postfixMissing, startPrivatePostfix, type PrivatePostfix } from './private-postfix.js';

const isCI = process.env.CI === 'true' || process.env.CI === '1';
const missing = postfixMissing();
if (missing && !isCI) console.warn(`Skipping the Postfix bounce proof: ${missing}.`);

describe.skipIf(missing !== undefined && !isCI)('a real Postfix bounces a mail it accepted, and Outbox reads its DSN', () => {
  let postfix: PrivatePostfix | undefined;
  let outbox: BounceOutbox | undefined;

  beforeAll(async () => {
    if (missing) throw new Error(`The Postfix bounce proof cannot run in CI: ${missing}`);
    const postfixPort = await freePort();
    outbox = await startBounceOutbox({ RELAY_URL: `smtp://127.0.0.1:${postfixPort}`, MAIL_HOSTNAME: 'outbox.example.com' });
    postfix = await startPrivatePostfix({
      port: postfixPort,
      routes: {
        'dead.test': 'error:5.1.1 Mailbox does not exist',
        'bounce.test': `smtp:[127.0.0.1]:${outbox.bouncePort}`,
      },
    });
  }, 90_000);

  afterAll(async () => {
    await postfix?.stop();
    await outbox?.stop();
  }, 90_000);

  it('ProviderSent on Postfix’s 250, then ProviderError with Postfix’s diagnostic; the address is suppressed', async () => {
    const box = outbox!;
    const id = await box.submit(['user@dead.test'], 'Postfix will bounce this');
    await waitUntil(
      async () => (await box.detail(id)).status !== MailStatus.Queued && (await box.detail(id)).status !== MailStatus.Processing,
      {
        timeoutMs: 60_000,
        what: 'Postfix to answer the delivery',
      },
    );
    await waitUntil(async () => (await box.detail(id)).status === MailStatus.ProviderError, {
      timeoutMs: 60_000,
      what: `Postfix's DSN to turn the mail ProviderError (Postfix log:\n${postfix!.log()})`,
    }).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${postfix!.log()}`);
    });

    const detail = await box.detail(id);
    const types = detail.events.map((e) => e.type);
    // Postfix took it first: the relay's 250, then the bounce.
    expect(types.indexOf('sent')).toBeGreaterThanOrEqual(0);
    expect(types.indexOf('bounced')).toBeGreaterThan(types.indexOf('sent'));
    const recipient = detail.recipients!.find((r) => r.recipientMail === 'user@dead.test' && r.outcome !== null)!;
    expect(recipient.outcome).toBe('bounced');
    expect(recipient.reply).toContain('Mailbox does not exist');

    const suppressed = (await suppressedAmong(box.running.store.db, ['user@dead.test'], Date.now())).get('user@dead.test');
    expect(suppressed).toMatchObject({ reason: 'hard_bounce', mail_id: id });
    expect(suppressed!.detail).toContain('Mailbox does not exist');

    const list = await box.running.app.inject({
      method: 'GET',
      url: '/api/v1/bounces?matched=true',
      headers: { authorization: `Token ${box.token}` },
    });
    const report = (list.json() as BouncesResponse).data.find((r) => r.mailId === id)!;
    expect(report).toMatchObject({ kind: 'dsn', matchedBy: 'return-path', envelopeFrom: '' });
    expect(report.envelopeTo).toBe(await box.returnPathOf(id));
    expect(report.summary.recipients).toEqual([
      expect.objectContaining({ recipient: 'user@dead.test', action: 'failed', status: '5.1.1' }),
    ]);
  }, 150_000);
});
