/**
 * The SMTP manners end to end, wired as `npm start` wires it, on the engine under test (SQLite, or
 * PostgreSQL with OUTBOX_TEST_ENGINE=postgres): real SMTP and HTTP clients submit, the worker delivers
 * to the capture relay on loopback (SIZE limit on, dialogue recorded), and each test checks what the
 * relay received against what was stored.
 */
import { MailStatus } from '@outbox/contract';
import nodemailer from 'nodemailer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listCapturedMessages, startCaptureRelay, type CaptureRelay, type CapturedMessage } from '../../src/delivery/capture-relay.js';
import type { RunningOutbox } from '../../src/main.js';
import { makeTempDir, testEngine } from '../support/context.js';
import { freePort } from '../support/net.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { smtpSessionWithData } from '../support/smtp-session.js';
import fs from 'node:fs';

const RELAY_LIMIT = 20_000;
let relayDir: string;
let relay: CaptureRelay;
let environment: OutboxEnvironment;
let running: RunningOutbox;
let apiKey: string;

beforeEach(async () => {
  relayDir = makeTempDir('outbox-relay-');
  relay = await startCaptureRelay({ dataDir: relayDir, maxMessageBytes: RELAY_LIMIT, closeTimeoutMs: 1000 });
  environment = await freshEnvironment({ RELAY_URL: relay.url, MAIL_HOSTNAME: 'mail.example.com', SMTP_PORT: String(await freePort()) });
  running = await startInProcess(environment.env);
  apiKey = await running.services.auth.createApiKey('shop');
});

afterEach(async () => {
  await running.stop();
  await relay.close();
  await environment.dispose();
  fs.rmSync(relayDir, { recursive: true, force: true });
});

async function waitUntil<T>(check: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const finished = (id: number) =>
  waitUntil(async () => {
    const detail = await running.services.mails.getMailDetail(id);
    return detail.status === MailStatus.Queued || detail.status === MailStatus.Processing ? undefined : detail;
  }, `mail ${id} to finish`);

const capturedWith = (messageId: string) =>
  waitUntil(async () => {
    for (const message of await listCapturedMessages(relayDir)) {
      if (fs.readFileSync(message.emlPath, 'latin1').includes(messageId)) return message;
    }
    return undefined;
  }, `the relay to receive ${messageId}`);

function smtpClient() {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port: running.smtpPort!,
    secure: false,
    ignoreTLS: true,
    auth: { user: 'app', pass: apiKey },
  });
}

async function smtpSubmit(envelope: { from: string; to: string[] }, raw: string | Buffer) {
  const client = smtpClient();
  try {
    const info = await client.sendMail({ envelope, raw });
    return Number(/queued as (\d+)/.exec(info.response)![1]);
  } finally {
    client.close();
  }
}

async function postMail(body: unknown): Promise<Response> {
  return fetch(`http://127.0.0.1:${running.httpPort}/api/v1/mail`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const relayedBytes = (message: CapturedMessage) => fs.readFileSync(message.emlPath);

describe(`SMTP manners end to end (${testEngine})`, () => {
  it('an undated 8-bit SMTP mail with a Bcc header: Date added, Bcc gone, envelope kept, BODY=8BITMIME and SIZE= declared, bytes as stored', async () => {
    const raw =
      'From: Shop <shop@example.com>\r\nTo: ann@example.net\r\nBcc: audit@example.org\r\nSubject: =?utf-8?Q?Gr=C3=BC=C3=9Fe?=\r\n' +
      'MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln\r\n';
    const id = await smtpSubmit({ from: 'shop@example.com', to: ['ann@example.net', 'audit@example.org'] }, raw);
    const detail = await finished(id);
    expect(detail.status).toBe(MailStatus.ProviderSent);
    const stored = await running.services.mails.getRawMessage(id);
    const captured = await capturedWith(detail.messageId);

    expect(relayedBytes(captured).equals(stored)).toBe(true);
    const text = stored.toString('utf8');
    expect(text).toMatch(/^Date: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000\r$/m);
    expect(detail.messageId).toMatch(/^<[0-9a-f-]{36}@mail\.example\.com>$/);
    expect(text).not.toMatch(/^Bcc:/im);
    expect(captured.envelope.rcptTo.sort()).toEqual(['ann@example.net', 'audit@example.org']);
    expect(captured.envelope.mailFromParams).toEqual({ BODY: '8BITMIME', SIZE: String(stored.length) });
    expect(captured.envelope.dialogue).toContain('C: EHLO mail.example.com');
  });

  it('the null sender: MAIL FROM:<> over SMTP and nullSender over JSON are relayed as <>', async () => {
    const smtpId = await smtpSubmit(
      { from: '', to: ['ann@example.net'] },
      'From: shop@example.com\r\nTo: ann@example.net\r\nSubject: Auto: away\r\nAuto-Submitted: auto-replied\r\n\r\nAway\r\n',
    );
    const response = await postMail({
      fromMail: 'shop@example.com',
      to: [{ recipientMail: 'ann@example.net' }],
      subject: 'Delivery report',
      text: 'x',
      nullSender: true,
      headers: { 'Auto-Submitted': 'auto-replied' },
    });
    expect(response.status).toBe(202);
    const jsonId = ((await response.json()) as { data: Array<{ id: number }> }).data[0]!.id;
    for (const id of [smtpId, jsonId]) {
      const detail = await finished(id);
      expect(detail.status).toBe(MailStatus.ProviderSent);
      expect(detail.envelopeFrom).toBe('');
      const captured = await capturedWith(detail.messageId);
      expect(captured.envelope.mailFrom).toBe('');
      expect(captured.envelope.dialogue.some((line) => line.startsWith('C: MAIL FROM:<> '))).toBe(true);
      expect(relayedBytes(captured).toString()).toMatch(/^From: shop@example\.com\r$/m);
    }
  });

  it('a mail larger than the relay’s SIZE ends ProviderError before DATA, with the reason as its reply', async () => {
    const response = await postMail({
      fromMail: 'shop@example.com',
      to: [{ recipientMail: 'ann@example.net' }],
      subject: 'Big',
      text: 'x'.repeat(RELAY_LIMIT),
    });
    const id = ((await response.json()) as { data: Array<{ id: number }> }).data[0]!.id;
    const detail = await finished(id);
    expect(detail.status).toBe(MailStatus.ProviderError);
    expect(detail.providerReply).toMatch(/^552 5\.3\.4 Not sent: the message is \d+ bytes and the relay accepts at most 20000/);
    expect(detail.attempts).toBe(1);
    expect(await listCapturedMessages(relayDir)).toEqual([]);
  });

  it('a smuggling attempt with bare LF is one mail at the relay; one with bare CR is refused at DATA', async () => {
    const commands = (body: string) => [
      'EHLO client.example',
      `AUTH PLAIN ${Buffer.from(`\0app\0${apiKey}`).toString('base64')}`,
      'MAIL FROM:<shop@example.com>',
      'RCPT TO:<ann@example.net>',
      'DATA',
      `Message-ID: <smuggle-${body.length}@example.com>\r\nSubject: hi\r\n\r\n${body}`,
    ];
    const smuggled = 'MAIL FROM:<ceo@example.com>\r\nRCPT TO:<victim@example.org>\r\nDATA\r\nSubject: smuggled\r\n\r\npay\r\n.\r\n';
    const lf = await speak(running.smtpPort!, commands(`before\n.\n${smuggled}`));
    expect(lf.slice(-2)).toEqual([expect.stringMatching(/^250 OK: queued as \d+/), expect.stringMatching(/^221 /)]);
    const id = Number(/queued as (\d+)/.exec(lf.at(-2)!)![1]);
    const detail = await finished(id);
    expect(detail.status).toBe(MailStatus.ProviderSent);
    const captured = await listCapturedMessages(relayDir);
    expect(captured).toHaveLength(1);
    expect(captured[0]!.envelope.rcptTo).toEqual(['ann@example.net']);
    expect(relayedBytes(captured[0]!).toString('latin1')).toContain('\r\nMAIL FROM:<ceo@example.com>\r\n');

    const cr = await speak(running.smtpPort!, commands(`before\r.\r${smuggled}`));
    expect(cr.slice(-2)).toEqual([expect.stringMatching(/^554 5\.6\.0 Bare CR/), expect.stringMatching(/^221 /)]);
    expect((await running.services.mails.listMails({ limit: 10 })).meta.total).toBe(1);
  });

  it('a message the store cannot hold is refused at DATA with a 5xx, never a 451 to retry forever', async () => {
    // A NUL decoded from an encoded word lands in the stored subject; PostgreSQL text cannot hold it.
    const raw = 'From: shop@example.com\r\nTo: ann@example.net\r\nSubject: =?UTF-8?Q?a=00b?=\r\n\r\nbody\r\n';
    const outcome = await smtpSubmit({ from: 'shop@example.com', to: ['ann@example.net'] }, raw).then(
      (id) => ({ accepted: id }),
      (error: { responseCode?: number; response?: string }) => ({ refused: error.responseCode, response: error.response }),
    );
    if ('refused' in outcome) {
      expect(outcome.refused).toBe(554);
      expect(outcome.response).toMatch(/^554 5\.6\.0 /);
    } else {
      // The embedded store keeps NUL in text; then the mail must simply be delivered.
      expect(testEngine).toBe('sqlite');
      expect((await finished(outcome.accepted)).status).toBe(MailStatus.ProviderSent);
    }
    if (testEngine === 'postgres') expect(outcome).toMatchObject({ refused: 554 });
  });

  it('a NUL in a body is kept in the raw bytes only, so both stores take the mail and deliver it', async () => {
    // Bodies are not stored beside the raw message (submission-preparation.ts): a NUL decoded from
    // quoted-printable, which PostgreSQL text cannot hold, no longer reaches a text column.
    const raw =
      'From: shop@example.com\r\nTo: ann@example.net\r\nSubject: nul\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\na=00b\r\n';
    const id = await smtpSubmit({ from: 'shop@example.com', to: ['ann@example.net'] }, raw);
    expect((await finished(id)).status).toBe(MailStatus.ProviderSent);
  });

  it('JSON: trace, signature and MIME-structure headers and __proto__ are refused naming the field; 301 recipients too', async () => {
    const base = { fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'x', text: 'x' };
    for (const name of ['Return-Path', 'Received', 'DKIM-Signature', 'Resent-From', 'Sender', 'Content-Disposition']) {
      const response = await postMail({ ...base, headers: { [name]: 'x' } });
      expect(response.status, name).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toContain(`headers.${name} cannot be given`);
    }
    const proto = await postMail(
      `{"fromMail":"shop@example.com","to":[{"recipientMail":"ann@example.net"}],"subject":"x","headers":{"__proto__":"x"}}`,
    );
    expect(proto.status).toBe(400);
    const many = (n: number, domain: string) => Array.from({ length: n }, (_, i) => ({ recipientMail: `r${i}@${domain}` }));
    const tooMany = await postMail({ ...base, to: many(200, 'a.example'), bcc: many(101, 'b.example') });
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { error: { message: string } }).error.message).toContain('a mail has at most 300');
    expect((await postMail({ ...base, to: many(300, 'a.example') })).status).toBe(202);
  });
});

/** Writes each line, waiting for a reply after each but the last (message content plus the end of DATA), then QUITs. */
async function speak(port: number, lines: string[]): Promise<string[]> {
  const replies = await smtpSessionWithData(port, lines.slice(0, -1), lines.at(-1)!);
  return replies.map((reply) => reply.split('\n').at(-1)!);
}
