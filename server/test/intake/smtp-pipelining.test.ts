/**
 * A client that pipelines as MTAs do (RFC 2920): MAIL FROM, RCPT TO and DATA in one write,
 * then the message, its end-of-data dot and the next transaction's commands in the next write. Through the
 * listener wired to a real store, as main.ts wires it: every command gets its reply in order, each 250 names
 * the mail its message became, every mail is stored once, and the replies of one burst leave in one write.
 */
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { auth, createTestContext, getMailDetail, loginAs, type TestContext } from '../support/context.js';
import { startSmtpIntake, type SmtpIntake } from '../support/smtp-intake.js';
import { SmtpSession } from '../support/smtp-session.js';

let context: TestContext;
let smtp: SmtpIntake;
let token: string;

beforeEach(async () => {
  context = await createTestContext();
  token = await loginAs(context);
  smtp = await startSmtpIntake(context, 'pipelining');
});

afterEach(async () => {
  vi.restoreAllMocks();
  await smtp?.close();
  await context?.close();
});

interface Transaction {
  subject: string;
  to: string[];
  /** A recipient the listener refuses (553) inside the pipelined group; the others still go. */
  badRecipient?: string;
  body: string;
}

function envelopeCommands(t: Transaction): string {
  const recipients = [...t.to, ...(t.badRecipient ? [t.badRecipient] : [])];
  return `MAIL FROM:<shop@example.com>\r\n${recipients.map((to) => `RCPT TO:<${to}>\r\n`).join('')}DATA\r\n`;
}

/** The codes the envelope group must get, in order. */
const envelopeCodes = (t: Transaction) => [250, ...t.to.map(() => 250), ...(t.badRecipient ? [553] : []), 354];

/** The message as DATA carries it: CRLF lines, a leading dot doubled (RFC 5321 §4.5.2), then the dot. */
function dataOf(t: Transaction): string {
  const message = `From: Shop <shop@example.com>\r\nTo: ${t.to.join(', ')}\r\nSubject: ${t.subject}\r\n\r\n${t.body}\r\n`;
  return `${message.replace(/(^|\r\n)\./g, '$1..')}.\r\n`;
}

async function openAuthenticated(): Promise<SmtpSession> {
  const session = await SmtpSession.open(smtp.port);
  expect(await session.reply()).toMatch(/^220 /);
  expect(await session.command('EHLO client.example')).toMatch(/^250[- ]PIPELINING$/m);
  expect(await session.command(`AUTH PLAIN ${Buffer.from(`\0app\0${smtp.apiKey}`).toString('base64')}`)).toMatch(/^235 /);
  return session;
}

/**
 * Sends the transactions pipelined on one session, checking each reply's code in order; answers the id each
 * message's 250 named. Generous deadlines: a busy machine is slow, not wrong.
 */
async function sendPipelined(transactions: Transaction[]): Promise<number[]> {
  const session = await openAuthenticated();
  const codes = async (expected: number[]) => {
    const replies: string[] = [];
    for (const _ of expected) replies.push(await session.reply(30_000));
    expect(
      replies.map((r) => Number(r.slice(0, 3))),
      session.transcript.join('\n'),
    ).toEqual(expected);
    return replies;
  };
  try {
    session.write(envelopeCommands(transactions[0]!));
    await codes(envelopeCodes(transactions[0]!));
    const ids: number[] = [];
    for (const [i, t] of transactions.entries()) {
      const next = transactions[i + 1];
      session.write(dataOf(t) + (next ? envelopeCommands(next) : 'QUIT\r\n'));
      const [queued] = await codes([250, ...(next ? envelopeCodes(next) : [221])]);
      ids.push(Number(/queued as (\d+)/.exec(queued!)?.[1]));
    }
    return ids;
  } finally {
    session.destroy();
  }
}

const transactionsFor = (session: string, count: number): Transaction[] =>
  Array.from({ length: count }, (_, i) => ({
    subject: `Pipelined ${session}${i}`,
    to: [`${session}${i}@example.com`, `copy-${session}${i}@example.com`],
    ...(i === 3 ? { badRecipient: 'nobody@intranet' } : {}),
    body: i === 5 ? `.leading dot in ${session}${i}\r\n..two dots` : `Body of ${session}${i}`,
  }));

describe('SMTP intake with a pipelining client (RFC 2920)', () => {
  it('answers every command in order and stores each message once, as the mail its 250 names', async () => {
    // Two sessions at once, so that their messages share group commits.
    const sessions = { a: transactionsFor('a', 12), b: transactionsFor('b', 12) };
    const [idsA, idsB] = await Promise.all([sendPipelined(sessions.a), sendPipelined(sessions.b)]);

    const ids = [...idsA, ...idsB];
    expect(new Set(ids).size).toBe(24);
    const list = await context.app.inject({ method: 'GET', url: '/api/v1/mail/list?limit=100', headers: auth(token) });
    expect(list.json().meta.total).toBe(24);
    expect(
      list
        .json()
        .data.map((m: { id: number }) => m.id)
        .sort((x: number, y: number) => x - y),
    ).toEqual([...ids].sort((x, y) => x - y));
    for (const [session, transactions] of [
      [idsA, sessions.a],
      [idsB, sessions.b],
    ] as const) {
      for (const [i, t] of transactions.entries()) {
        const mail = await getMailDetail(context, token, session[i]!);
        expect(mail.subject).toBe(t.subject);
        // The refused recipient of the pipelined group is not among them.
        expect(mail.to.map((r) => r.recipientMail)).toEqual(t.to);
      }
    }
    // Dot-stuffing undone: the stored line starts with one dot, the doubled one with two.
    const raw = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${idsA[5]}/raw`, headers: auth(token) });
    expect(raw.body).toContain('\r\n.leading dot in a5\r\n..two dots\r\n');
  });

  it("writes the replies to one pipelined burst in one write: the 250 of a message with the next group's", async () => {
    const session = await openAuthenticated();
    // Every write of a server-side socket of this listener reaches the kernel through _write or _writev.
    const serverWrites: string[] = [];
    const record = (name: string) =>
      function (this: net.Socket) {
        if (this.localPort === smtp.port) serverWrites.push(name);
      };
    const write = net.Socket.prototype._write;
    const writev = net.Socket.prototype._writev!;
    vi.spyOn(net.Socket.prototype, '_write').mockImplementation(function (this: net.Socket, ...args) {
      record('write').call(this);
      return write.apply(this, args);
    });
    vi.spyOn(net.Socket.prototype, '_writev').mockImplementation(function (this: net.Socket, ...args) {
      record('writev').call(this);
      return writev.apply(this, args);
    });
    try {
      const [first, second] = transactionsFor('c', 2);
      session.write(envelopeCommands(first!));
      for (const code of envelopeCodes(first!)) expect(await session.reply(30_000)).toMatch(new RegExp(`^${code} `));
      expect(serverWrites).toHaveLength(1);

      serverWrites.length = 0;
      session.write(dataOf(first!) + envelopeCommands(second!));
      for (const code of [250, ...envelopeCodes(second!)]) expect(await session.reply(30_000)).toMatch(new RegExp(`^${code} `));
      expect(serverWrites).toHaveLength(1);
    } finally {
      session.destroy();
    }
  });
});
