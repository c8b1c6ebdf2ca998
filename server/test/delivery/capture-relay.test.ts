import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listCapturedMessages, startCaptureRelay } from '../../src/delivery/capture-relay.js';
import type { CaptureRelay } from '../../src/delivery/capture-relay.js';
import { ManualClock } from '../../src/clock.js';

let dataDir: string;
let relay: CaptureRelay | undefined;

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-capture-'));
});

afterEach(async () => {
  await relay?.close();
  relay = undefined;
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A plain, unpooled client: each call opens and closes its own session. */
function send(url: string, to: string[], raw: string | Buffer, auth?: { user: string; pass: string }) {
  const transport = nodemailer.createTransport({
    host: new URL(url).hostname,
    port: Number(new URL(url).port),
    secure: false,
    ignoreTLS: true,
    ...(auth ? { auth } : {}),
  });
  return transport.sendMail({ envelope: { from: 'app@example.com', to }, raw }).finally(() => transport.close());
}

const rawMessage =
  'From: app@example.com\r\nTo: someone@example.com\r\nSubject: Hello\r\nMessage-ID: <1@example.com>\r\n\r\n' +
  'Line one\r\n.leading dot survives\r\nLast line\r\n';

describe('startCaptureRelay', () => {
  it('stores the bytes exactly as received with the envelope beside them', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5));
    relay = await startCaptureRelay({ dataDir, clock });
    expect(relay.url).toBe(`smtp://127.0.0.1:${relay.port}`);

    const info = await send(relay.url, ['someone@example.com', 'other@example.org'], rawMessage);
    expect(info.response).toMatch(/^250 OK: queued as \d+-[0-9a-f]+$/);

    const messages = await listCapturedMessages(dataDir);
    expect(messages).toHaveLength(1);
    const [message] = messages;
    expect(info.response).toContain(message?.id);
    expect(message?.id.startsWith(`${clock.now()}-`)).toBe(true);
    expect(fs.readFileSync(message?.emlPath ?? '')).toEqual(Buffer.from(rawMessage));
    expect(message?.envelope).toEqual({
      mailFrom: 'app@example.com',
      rcptTo: ['someone@example.com', 'other@example.org'],
      receivedAt: '2026-01-02T03:04:05.000Z',
      size: Buffer.byteLength(rawMessage),
      mailFromParams: {},
      dialogue: [
        expect.stringMatching(/^S: 220 /),
        expect.stringMatching(/^C: EHLO /),
        expect.stringMatching(/^S: 250-/),
        'C: MAIL FROM:<app@example.com>',
        'S: 250 Accepted',
        'C: RCPT TO:<someone@example.com>',
        'S: 250 Accepted',
        'C: RCPT TO:<other@example.org>',
        'S: 250 Accepted',
        'C: DATA',
        'S: 354 End data with <CR><LF>.<CR><LF>',
        'C: <message content>',
        `S: 250 OK: queued as ${message?.id}`,
      ],
    });
  });

  it('advertises and enforces maxMessageBytes like a provider: SIZE in EHLO, 552 for content past it', async () => {
    relay = await startCaptureRelay({ dataDir, maxMessageBytes: 100 });
    const big = `${rawMessage}${'x'.repeat(200)}\r\n`;
    // sendMail({raw}) declares no SIZE=, so the relay reads the content and refuses it after DATA.
    const refusal = send(relay.url, ['someone@example.com'], big);
    await expect(refusal).rejects.toMatchObject({ responseCode: 552, response: '552 5.3.4 Message too big: the limit is 100 bytes' });
    expect(await listCapturedMessages(dataDir)).toEqual([]);
  });

  it('answers 550 for reject.test and 451 for defer.test at RCPT TO', async () => {
    relay = await startCaptureRelay({ dataDir });
    await expect(send(relay.url, ['x@reject.test'], rawMessage)).rejects.toMatchObject({
      code: 'EENVELOPE',
      responseCode: 550,
      response: '550 5.1.1 Recipient rejected by the capture relay (reject.test)',
    });
    await expect(send(relay.url, ['x@DEFER.test'], rawMessage)).rejects.toMatchObject({
      code: 'EENVELOPE',
      responseCode: 451,
      response: '451 4.3.0 Try again later (defer.test)',
    });
    expect(await listCapturedMessages(dataDir)).toEqual([]);
  });

  it('keeps a mail for the accepted recipients when others are refused', async () => {
    relay = await startCaptureRelay({ dataDir });
    const info = await send(relay.url, ['ok@example.com', 'no@reject.test'], rawMessage);
    expect(info.accepted).toEqual(['ok@example.com']);
    expect(info.rejected).toEqual(['no@reject.test']);
    const [message] = await listCapturedMessages(dataDir);
    expect(message?.envelope.rcptTo).toEqual(['ok@example.com']);
  });

  it('accepts any AUTH and also no AUTH', async () => {
    relay = await startCaptureRelay({ dataDir });
    await send(relay.url, ['a@example.com'], rawMessage, { user: 'anyone', pass: 'anything' });
    await send(relay.url, ['b@example.com'], rawMessage);
    const verified = nodemailer.createTransport(`smtp://user:pass@127.0.0.1:${relay.port}`);
    await expect(verified.verify()).resolves.toBe(true);
    verified.close();
    expect(await listCapturedMessages(dataDir)).toHaveLength(2);
  });

  it('discards everything in store: false mode', async () => {
    relay = await startCaptureRelay({ dataDir, store: false });
    const info = await send(relay.url, ['a@example.com'], rawMessage);
    expect(info.response).toBe('250 OK: discarded');
    expect(fs.existsSync(path.join(dataDir, 'captured'))).toBe(false);
    expect(await listCapturedMessages(dataDir)).toEqual([]);
  });

  it('lists messages oldest first', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    relay = await startCaptureRelay({ dataDir, clock });
    await send(relay.url, ['first@example.com'], rawMessage);
    clock.advance(1000);
    await send(relay.url, ['second@example.com'], rawMessage);
    const recipients = (await listCapturedMessages(dataDir)).map((message) => message.envelope.rcptTo[0]);
    expect(recipients).toEqual(['first@example.com', 'second@example.com']);
  });
});
