import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import nodemailer from 'nodemailer';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureMessageId, startSmtpListener } from '../../src/intake/smtp-listener.js';
import type { SmtpListener, SmtpListenerOptions, SmtpSubmission } from '../../src/intake/smtp-listener.js';
import { smtpDialog } from '../support/smtp-session.js';

interface Principal {
  keyName: string;
}

const API_KEY = 'ob_test_key_123';
const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');

let listener: SmtpListener | undefined;
let submissions: SmtpSubmission<Principal>[] = [];

afterEach(async () => {
  await listener?.close();
  listener = undefined;
  submissions = [];
});

async function start(overrides: Partial<SmtpListenerOptions<Principal>> = {}): Promise<SmtpListener> {
  listener = await startSmtpListener<Principal>({
    port: 0,
    closeTimeoutMs: 1000,
    authenticate: async (apiKey) => (apiKey === API_KEY ? { keyName: 'shop' } : undefined),
    accept: async (submission) => {
      submissions.push(submission);
      return { id: 41 + submissions.length };
    },
    ...overrides,
  });
  return listener;
}

function client(port: number, options: { method?: 'PLAIN' | 'LOGIN'; pass?: string | null; tls?: boolean } = {}) {
  const { method = 'PLAIN', pass = API_KEY, tls = false } = options;
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ...(tls ? { requireTLS: true, tls: { rejectUnauthorized: false } } : { ignoreTLS: true }),
    ...(pass === null ? {} : { auth: { user: 'ignored-username', pass }, authMethod: method }),
  });
}

async function submit(port: number, raw: string | Buffer | Readable, options: Parameters<typeof client>[1] & { to?: string[] } = {}) {
  const transport = client(port, options);
  try {
    return await transport.sendMail({ envelope: { from: 'app@example.com', to: options.to ?? ['ann@example.com'] }, raw });
  } finally {
    transport.close();
  }
}

/** Speaks SMTP line by line, for replies a well-behaved client would never provoke (test/support/smtp-session.ts). */
const dialog = smtpDialog;

const plainAuth = `AUTH PLAIN ${Buffer.from(`\0user\0${API_KEY}`).toString('base64')}`;
const withId =
  'Message-ID: <kept-1@example.com>\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\nFrom: app@example.com\r\nTo: ann@example.com\r\nSubject: Hi\r\n\r\nBody\r\n';
const withoutId =
  'Date: Mon, 23 Nov 2026 10:00:00 +0000\r\nFrom: app@example.com\r\nTo: ann@example.com\r\nSubject: Hi\r\n\r\nMessage-ID: <in-body@example.com>\r\n';

describe('startSmtpListener', () => {
  it('accepts a submission with AUTH PLAIN and keeps an existing Message-ID byte for byte', async () => {
    const { port } = await start();
    const info = await submit(port, withId, { method: 'PLAIN', to: ['ann@example.com', 'bob@example.org'] });
    expect(info.response).toBe('250 OK: queued as 42');
    expect(submissions).toHaveLength(1);
    const [submission] = submissions;
    expect(submission?.principal).toEqual({ keyName: 'shop' });
    expect(submission?.envelopeFrom).toBe('app@example.com');
    expect(submission?.envelopeTo).toEqual(['ann@example.com', 'bob@example.org']);
    expect(submission?.messageId).toBe('<kept-1@example.com>');
    expect(submission?.raw.equals(Buffer.from(withId))).toBe(true);
  });

  it('accepts a submission with AUTH LOGIN, the username being ignored', async () => {
    const { port } = await start();
    const info = await submit(port, withId, { method: 'LOGIN' });
    expect(info.response).toBe('250 OK: queued as 42');
    expect(submissions[0]?.principal).toEqual({ keyName: 'shop' });
  });

  it('adds a Message-ID at the top when the headers have none', async () => {
    const { port } = await start();
    await submit(port, withoutId);
    const [submission] = submissions;
    expect(submission?.messageId).toMatch(/^<[0-9a-f-]{36}@[^@>]+>$/);
    expect(submission?.raw.toString('latin1')).toBe(`Message-ID: ${submission?.messageId}\r\n${withoutId}`);
  });

  it('answers 535 to a wrong API key', async () => {
    const { port } = await start();
    await expect(submit(port, withId, { pass: 'wrong' })).rejects.toMatchObject({
      code: 'EAUTH',
      responseCode: 535,
      response: '535 5.7.8 Authentication failed',
    });
    expect(submissions).toEqual([]);
  });

  it('answers 530 to MAIL FROM without AUTH', async () => {
    const { port } = await start();
    await expect(submit(port, withId, { pass: null })).rejects.toMatchObject({ responseCode: 530 });
    const replies = await dialog(port, ['EHLO client.example', 'MAIL FROM:<app@example.com>']);
    expect(replies[1]).toContain('AUTH PLAIN LOGIN');
    expect(replies[1]).not.toContain('STARTTLS');
    expect(replies[2]).toMatch(/^530 5\.7\.0 Authentication required/);
  });

  it('answers 454 when the key lookup itself fails, so the client retries', async () => {
    const { port } = await start({
      authenticate: async () => {
        throw new Error('store down');
      },
    });
    await expect(submit(port, withId)).rejects.toMatchObject({ code: 'EAUTH', responseCode: 454 });
  });

  it('refuses invalid envelope addresses: 501 for broken syntax, 553 for addresses it will not take', async () => {
    const { port } = await start();
    const replies = await dialog(port, [
      'EHLO client.example',
      plainAuth,
      'MAIL FROM:<not an address>',
      'MAIL FROM:<app@intranet>',
      'MAIL FROM:<app@example.com>',
      'RCPT TO:<bob@intranet>',
      'RCPT TO:<bob@example.com>',
      'QUIT',
    ]);
    expect(replies[2]).toMatch(/^235 /);
    expect(replies[3]).toMatch(/^501 /);
    expect(replies[4]).toBe('553 5.1.7 Sender address <app@intranet> is not valid');
    expect(replies[5]).toMatch(/^250 /);
    expect(replies[6]).toBe('553 5.1.3 Recipient address <bob@intranet> is not valid');
    expect(replies[7]).toMatch(/^250 /);
  });

  it('answers 552 to a message over the size limit, announced or not', async () => {
    const { port } = await start({ maxMessageBytes: 1024 });
    const big = `${withId}${'x'.repeat(76)}\r\n`.repeat(40);
    // With a known size nodemailer announces it (MAIL FROM SIZE=), and the listener refuses early.
    await expect(submit(port, big)).rejects.toMatchObject({ responseCode: 552 });
    // A stream has no known size, so the limit is enforced while reading DATA.
    await expect(submit(port, Readable.from([Buffer.from(big)]))).rejects.toMatchObject({
      code: 'EMESSAGE',
      responseCode: 552,
      response: '552 5.3.4 Message too big: the limit is 1024 bytes',
    });
    expect(submissions).toEqual([]);
    // A message within the limit still goes through on the same listener.
    await expect(submit(port, withId)).resolves.toMatchObject({ response: '250 OK: queued as 42' });
  });

  it('maps accept() errors: smtpCode and responseCode are answered, anything else is 451', async () => {
    const errors: unknown[] = [
      Object.assign(new Error('5.7.1 Sender not allowed for this key'), { smtpCode: 550 }),
      Object.assign(new Error('4.7.1 Rate limited, slow down'), { responseCode: 450 }),
      new Error('database is locked'),
      Object.assign(new Error('not a failure code'), { smtpCode: 250 }),
    ];
    const { port } = await start({
      accept: async () => {
        throw errors.shift();
      },
    });
    await expect(submit(port, withId)).rejects.toMatchObject({ responseCode: 550, response: '550 5.7.1 Sender not allowed for this key' });
    await expect(submit(port, withId)).rejects.toMatchObject({ responseCode: 450, response: '450 4.7.1 Rate limited, slow down' });
    await expect(submit(port, withId)).rejects.toMatchObject({ responseCode: 451, response: '451 4.3.0 Temporary failure, try again' });
    await expect(submit(port, withId)).rejects.toMatchObject({ responseCode: 451 });
  });

  it('offers STARTTLS only with a certificate, and then requires it before AUTH', async () => {
    const tls = {
      key: fs.readFileSync(path.join(fixtures, 'localhost-key.pem')),
      cert: fs.readFileSync(path.join(fixtures, 'localhost-cert.pem')),
    };
    const { port } = await start({ tls });
    const replies = await dialog(port, ['EHLO client.example', plainAuth]);
    expect(replies[1]).toContain('STARTTLS');
    expect(replies[2]).toMatch(/^538 /);
    const info = await submit(port, withId, { tls: true });
    expect(info.response).toBe('250 OK: queued as 42');
  });

  it('stops accepting connections once closed', async () => {
    const started = await start();
    const { port } = started;
    await started.close();
    listener = undefined;
    await expect(submit(port, withId)).rejects.toMatchObject({ code: 'ESOCKET' });
  });
});

describe('ensureMessageId', () => {
  const fixedId = () => '<new@outbox.local>';

  it('finds the header in any case, folded, or with a space before the colon', () => {
    for (const header of ['message-id: <a@b.c>', 'MESSAGE-ID:\r\n <a@b.c>', 'Message-Id :\r\n\t<a@b.c>']) {
      const raw = Buffer.from(`Subject: x\r\n${header}\r\nFrom: y@example.com\r\n\r\nbody\r\n`);
      const result = ensureMessageId(raw, fixedId);
      expect(result).toEqual({ raw, messageId: '<a@b.c>', added: false });
    }
  });

  it('ignores a Message-ID in the body or in a folded line of another field', () => {
    const raw = Buffer.from('Subject: x\r\n Message-ID: <fake@x.y>\r\n\r\nMessage-ID: <body@x.y>\r\n');
    const result = ensureMessageId(raw, fixedId);
    expect(result.added).toBe(true);
    expect(result.raw.toString()).toBe(`Message-ID: <new@outbox.local>\r\n${raw.toString()}`);
  });

  it('keeps bare-LF messages in their own line ending style and non-ASCII bytes intact', () => {
    const raw = Buffer.from('Subject: Grüße\nFrom: y@example.com\n\nbody ✓\n');
    const result = ensureMessageId(raw, fixedId);
    expect(result.raw.equals(Buffer.concat([Buffer.from('Message-ID: <new@outbox.local>\n'), raw]))).toBe(true);
  });

  it('treats an empty Message-ID as missing', () => {
    const result = ensureMessageId(Buffer.from('Message-ID:   \r\nSubject: x\r\n\r\n'), fixedId);
    expect(result.added).toBe(true);
    expect(result.messageId).toBe('<new@outbox.local>');
  });
});
