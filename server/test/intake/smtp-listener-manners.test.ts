/**
 * The SMTP listener as a well-behaved submission server: the null sender, Date added,
 * Bcc removed, one recipient limit (452), a connection limit, a growing delay after failed AUTH, and the
 * published SMTP smuggling variants, each against real clients on loopback.
 */
import net from 'node:net';
import nodemailer from 'nodemailer';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_RECIPIENTS_PER_MAIL } from '@outbox/contract';
import { checkLineBreaks, ensureDate, ensureMessageId, formatRfc5322Date, removeBcc } from '../../src/intake/message-headers.js';
import { startSmtpListener } from '../../src/intake/smtp-listener.js';
import type { SmtpListener, SmtpListenerOptions, SmtpSubmission } from '../../src/intake/smtp-listener.js';
import { smtpDialog, smtpSessionWithData } from '../support/smtp-session.js';

interface Principal {
  keyName: string;
}

const API_KEY = 'ob_test_key_123';
const NOW = Date.UTC(2026, 10, 23, 15, 4, 5);
let listener: SmtpListener | undefined;
let submissions: SmtpSubmission<Principal>[] = [];

afterEach(async () => {
  await listener?.close();
  listener = undefined;
  submissions = [];
});

async function start(overrides: Partial<SmtpListenerOptions<Principal>> = {}): Promise<number> {
  listener = await startSmtpListener<Principal>({
    port: 0,
    closeTimeoutMs: 1000,
    now: () => NOW,
    authFailureDelayMs: 0,
    authenticate: async (apiKey) => (apiKey === API_KEY ? { keyName: 'shop' } : undefined),
    accept: async (submission) => {
      submissions.push(submission);
      return { id: 41 + submissions.length };
    },
    ...overrides,
  });
  return listener.port;
}

async function submit(port: number, raw: string | Buffer, envelope: { from: string; to: string[] }, pass = API_KEY) {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, auth: { user: 'app', pass } });
  try {
    return await transport.sendMail({ envelope, raw });
  } finally {
    transport.close();
  }
}

/**
 * A raw session: greeting, EHLO, AUTH, then each command waits for its reply; `data` is written in one go
 * after the 354 and followed by QUIT, and every reply up to the socket's end is returned.
 */
const rawSession = (port: number, commands: string[], data?: string, deadlineMs = 5000): Promise<string[]> =>
  data === undefined ? smtpDialog(port, commands, deadlineMs) : smtpSessionWithData(port, commands, data, deadlineMs);

const plainAuth = `AUTH PLAIN ${Buffer.from(`\0app\0${API_KEY}`).toString('base64')}`;
const dated = 'Date: Mon, 23 Nov 2026 10:00:00 +0000\r\nMessage-ID: <m1@example.com>\r\n';

describe('null sender', () => {
  it('accepts MAIL FROM:<> and hands the empty sender on', async () => {
    const port = await start();
    const replies = await rawSession(
      port,
      ['EHLO client.example', plainAuth, 'MAIL FROM:<>', 'RCPT TO:<ann@example.com>', 'DATA'],
      `${dated}Subject: Out of office\r\n\r\nAway.\r\n.\r\n`,
    );
    expect(replies.slice(3)).toEqual([
      '250 Accepted',
      '250 Accepted',
      '354 End data with <CR><LF>.<CR><LF>',
      '250 OK: queued as 42',
      expect.stringMatching(/^221 /),
    ]);
    expect(submissions[0]!.envelopeFrom).toBe('');
  });
});

describe('headers fixed at acceptance', () => {
  it('adds Date (the acceptance time, RFC 5322 form) when missing, and keeps a message that has one byte for byte', async () => {
    const port = await start();
    const undated = 'Message-ID: <m2@example.com>\r\nFrom: app@example.com\r\nSubject: Hi\r\n\r\nBody\r\n';
    await submit(port, undated, { from: 'app@example.com', to: ['ann@example.com'] });
    expect(submissions[0]!.raw.toString('latin1')).toBe(`Date: Mon, 23 Nov 2026 15:04:05 +0000\r\n${undated}`);
    const complete = `${dated}From: app@example.com\r\nSubject: Hi\r\n\r\nBody\r\n`;
    await submit(port, complete, { from: 'app@example.com', to: ['ann@example.com'] });
    expect(submissions[1]!.raw.equals(Buffer.from(complete))).toBe(true);
  });

  it('removes Bcc, folded lines included, and keeps every envelope recipient', async () => {
    const port = await start();
    const raw =
      `${dated}From: app@example.com\r\nTo: ann@example.com\r\nBcc: hidden@example.com,\r\n  other@example.com\r\n` +
      'Subject: Hi\r\nbcc: second@example.com\r\n\r\nBcc: in the body stays\r\n';
    const envelope = { from: 'app@example.com', to: ['ann@example.com', 'hidden@example.com', 'other@example.com', 'second@example.com'] };
    await submit(port, raw, envelope);
    expect(submissions[0]!.raw.toString('latin1')).toBe(
      `${dated}From: app@example.com\r\nTo: ann@example.com\r\nSubject: Hi\r\n\r\nBcc: in the body stays\r\n`,
    );
    expect(submissions[0]!.envelopeTo).toEqual(envelope.to);
  });

  it('formats dates like the JSON composer, and helpers leave unrelated bytes alone', () => {
    expect(formatRfc5322Date(Date.UTC(2026, 0, 1))).toBe('Thu, 01 Jan 2026 00:00:00 +0000');
    const raw = Buffer.from('Date: x\r\nSubject: Grüße\r\n\r\nbody\r\n');
    expect(ensureDate(raw, NOW)).toEqual({ raw, added: false });
    expect(removeBcc(raw)).toEqual({ raw, removed: 0 });
  });

  it('reads only the header block: Date, Bcc and Message-ID in a large body are body, kept byte for byte', () => {
    // The helpers turn only the header block into text (a 10 MB body costs no string copies); a field name
    // after the empty line, in either line-ending style, is body.
    for (const eol of ['\r\n', '\n']) {
      const body = `Date: in body${eol}Bcc: in@body.example${eol}Message-ID: <in@body>${eol}${'é'.repeat(300_000)}${eol}`;
      const raw = Buffer.from(`Subject: s${eol}Bcc: x@example.com${eol}${eol}${body}`, 'latin1');
      const withoutBcc = removeBcc(raw);
      expect(withoutBcc.removed).toBe(1);
      expect(withoutBcc.raw.equals(Buffer.from(`Subject: s${eol}${eol}${body}`, 'latin1'))).toBe(true);
      const dated = ensureDate(withoutBcc.raw, NOW);
      expect(dated.added).toBe(true);
      expect(dated.raw.subarray(0, 6 + formatRfc5322Date(NOW).length + eol.length).toString('latin1')).toBe(
        `Date: ${formatRfc5322Date(NOW)}${eol}`,
      );
      expect(ensureMessageId(dated.raw, () => '<new@x>').added).toBe(true);
    }
  });
});

describe('limits', () => {
  it('answers 452 past the recipient limit, which is the JSON API’s', async () => {
    expect(MAX_RECIPIENTS_PER_MAIL).toBe(300);
    const port = await start({ maxRecipients: 3 });
    const replies = await rawSession(port, [
      'EHLO client.example',
      plainAuth,
      'MAIL FROM:<app@example.com>',
      ...[1, 2, 3, 4, 5].map((n) => `RCPT TO:<r${n}@example.com>`),
    ]);
    expect(replies.slice(4)).toEqual([
      '250 Accepted',
      '250 Accepted',
      '250 Accepted',
      '452 4.5.3 Too many recipients: at most 3 per mail',
      '452 4.5.3 Too many recipients: at most 3 per mail',
    ]);
  });

  it('takes 300 recipients by default and refuses the 301st', async () => {
    const port = await start();
    const replies = await rawSession(
      port,
      [
        'EHLO client.example',
        plainAuth,
        'MAIL FROM:<app@example.com>',
        ...Array.from({ length: 301 }, (_, n) => `RCPT TO:<r${n}@example.com>`),
      ],
      undefined,
      20_000,
    );
    expect(replies.slice(4, 304).every((reply) => reply === '250 Accepted')).toBe(true);
    expect(replies[304]).toBe('452 4.5.3 Too many recipients: at most 300 per mail');
  });

  it('answers 421 to a connection past the limit', async () => {
    const port = await start({ maxConnections: 2 });
    const held = [net.connect(port, '127.0.0.1'), net.connect(port, '127.0.0.1')];
    try {
      await Promise.all(held.map((socket) => new Promise((resolve) => socket.once('data', resolve))));
      const replies = await rawSession(port, []);
      expect(replies[0]).toMatch(/^421 .*Too many connected clients/);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it('answers 421 to a client address past its own session limit, and not to other addresses (issue 24 item 5)', async () => {
    const port = await start({ maxConnections: 100, maxConnectionsPerClient: 2 });
    const greeting = (socket: net.Socket) =>
      new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))));
    const held = [net.connect(port, '127.0.0.1'), net.connect(port, '127.0.0.1')];
    const other = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
    try {
      expect(await Promise.all(held.map(greeting))).toEqual([expect.stringMatching(/^220 /), expect.stringMatching(/^220 /)]);
      const replies = await rawSession(port, []);
      expect(replies[0]).toBe('421 4.7.0 Too many connections from your address: at most 2 at once');
      expect(await greeting(other)).toMatch(/^220 /);
      // A session that ends gives its place back.
      held[0]!.end('QUIT\r\n');
      const deadline = Date.now() + 5_000;
      for (;;) {
        const again = await rawSession(port, ['QUIT']);
        if (again[0]?.startsWith('220 ')) break;
        if (Date.now() > deadline) throw new Error(`the freed place was not given back: ${JSON.stringify(again)}`);
      }
    } finally {
      for (const socket of [...held, other]) socket.destroy();
    }
  });

  it('waits longer after each failed AUTH from the same address, and not after a success', async () => {
    // The waits are long enough to tell apart on a loaded machine: a reply's own time there can reach a second.
    const base = 300;
    const port = await start({ authFailureDelayMs: base });
    const timed = async (pass: string) => {
      const started = Date.now();
      const outcome = await submit(port, `${dated}\r\nx\r\n`, { from: 'app@example.com', to: ['a@example.com'] }, pass).then(
        () => 'sent',
        (error: { responseCode?: number }) => String(error.responseCode),
      );
      return { outcome, ms: Date.now() - started };
    };
    const first = await timed('wrong-1');
    const second = await timed('wrong-2');
    const third = await timed('wrong-3');
    expect([first.outcome, second.outcome, third.outcome]).toEqual(['535', '535', '535']);
    expect(first.ms).toBeGreaterThanOrEqual(base);
    expect(second.ms).toBeGreaterThanOrEqual(2 * base);
    expect(third.ms).toBeGreaterThanOrEqual(4 * base);
    const success = await timed(API_KEY);
    expect(success.outcome).toBe('sent');
    // A success starts the count again: one base wait, where a fourth failure in a row would wait 8 × base.
    const afterSuccess = await timed('wrong-4');
    expect(afterSuccess.outcome).toBe('535');
    expect(afterSuccess.ms).toBeGreaterThanOrEqual(base);
    expect(afterSuccess.ms).toBeLessThan(8 * base);
  });
});

describe('SMTP smuggling: bare CR and bare LF in DATA', () => {
  const smuggled =
    'MAIL FROM:<evil@example.com>\r\nRCPT TO:<victim@example.com>\r\nDATA\r\nFrom: ceo@example.com\r\nSubject: smuggled\r\n\r\nPay now\r\n';
  const message = (variant: string) => `${dated}From: app@example.com\r\nSubject: hello\r\n\r\nbefore${variant}${smuggled}.\r\n`;
  const session = (port: number, variant: string) =>
    rawSession(
      port,
      ['EHLO client.example', plainAuth, 'MAIL FROM:<app@example.com>', 'RCPT TO:<ann@example.com>', 'DATA'],
      message(variant),
    );

  // The published variants (SEC Consult, December 2023; Postfix's smtpd_forbid_bare_newline documentation).
  const withBareCr = ['\r.\r', '\r\n.\r', '\r.\r\n', '\r.\n', '\n.\r', '\r\n.\r\r\n'];
  const withBareLfOnly = ['\n.\n', '\n.\r\n', '\r\n.\n', '\n..\n'];

  it.each(withBareCr)('refuses %j with 554 and accepts nothing', async (variant) => {
    const port = await start();
    const replies = await session(port, variant);
    expect(replies[5]).toBe('354 End data with <CR><LF>.<CR><LF>');
    expect(replies.slice(6)).toEqual([
      expect.stringMatching(/^554 5\.6\.0 Bare CR \(a CR not followed by LF\) at byte \d+/),
      expect.stringMatching(/^221 /),
    ]);
    expect(submissions).toEqual([]);
  });

  it.each(withBareLfOnly)('keeps %j inside one mail, stored with CRLF only', async (variant) => {
    const port = await start();
    const replies = await session(port, variant);
    // One 250 for one mail, then QUIT: the smuggled MAIL FROM never became a command.
    expect(replies.slice(6)).toEqual(['250 OK: queued as 42', expect.stringMatching(/^221 /)]);
    expect(submissions).toHaveLength(1);
    const raw = submissions[0]!.raw;
    expect(submissions[0]!.envelopeTo).toEqual(['ann@example.com']);
    expect(raw.toString('latin1')).toContain('MAIL FROM:<evil@example.com>\r\n');
    expect(checkLineBreaks(raw)).toEqual({ ok: true, raw, normalisedLf: 0 });
  });

  it('normalises a message written with LF line ends throughout', async () => {
    // Over a raw socket: nodemailer as the client would already turn every LF into CRLF itself.
    const port = await start();
    const replies = await rawSession(
      port,
      ['EHLO client.example', plainAuth, 'MAIL FROM:<app@example.com>', 'RCPT TO:<ann@example.com>', 'DATA'],
      'Date: x\nMessage-ID: <lf@example.com>\nSubject: Gr\u00fc\u00dfe\n\nbody\n\r\n.\r\n',
    );
    expect(replies[6]).toBe('250 OK: queued as 42');
    expect(submissions[0]!.raw.toString('latin1')).toBe(
      'Date: x\r\nMessage-ID: <lf@example.com>\r\nSubject: Gr\u00fc\u00dfe\r\n\r\nbody\r\n\r\n',
    );
  });
});
