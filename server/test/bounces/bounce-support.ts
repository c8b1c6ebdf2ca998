/**
 * Helpers of the bounce tests: a raw SMTP client (so a test can send the null sender and see every reply), report
 * builders (an RFC 3464 DSN and an RFC 5965 feedback report, as MTAs and mailbox providers write them), and an
 * Outbox started as `npm start` starts it, with BOUNCE_DOMAIN and the bounce listener on.
 */
import net from 'node:net';
import type { MailDetail, MailDetailResponse, MailStatusCode } from '@outbox/contract';
import type { Kysely } from 'kysely';
import { expect } from 'vitest';
import type { Database } from '../../src/store/schema.js';
import type { RunningOutbox } from '../../src/main.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { freePort, waitUntil } from '../support/net.js';

export const BOUNCE_DOMAIN = 'bounce.test';

export interface SmtpReplies {
  /** Each command's reply line (the last line of a multi-line reply), banner first. */
  replies: string[];
  /** The final reply to the message (after DATA's dot), or the first refusal that ended the transaction. */
  last: string;
}

/**
 * Speaks SMTP to `port` and sends one message: EHLO, MAIL FROM, each RCPT TO, DATA, the bytes (dot-stuffed), QUIT.
 * Stops at the first 4xx/5xx (after a RSET-free QUIT) and answers every reply seen.
 */
export function sendSmtp(port: number, message: { from: string; to: string[]; raw: Buffer | string }): Promise<SmtpReplies> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const replies: string[] = [];
    let buffer = '';
    const raw = Buffer.isBuffer(message.raw) ? message.raw : Buffer.from(message.raw);
    const body = Buffer.from(
      raw
        .toString('latin1')
        .replace(/\r?\n/g, '\r\n')
        .replace(/(^|\r\n)\./g, '$1..'),
      'latin1',
    );
    const steps: Array<() => void> = [
      () => socket.write('EHLO reporter.test\r\n'),
      () => socket.write(`MAIL FROM:<${message.from}>\r\n`),
      ...message.to.map((to) => () => socket.write(`RCPT TO:<${to}>\r\n`)),
      () => socket.write('DATA\r\n'),
      () => {
        socket.write(body);
        socket.write(body.subarray(-2).toString() === '\r\n' ? '.\r\n' : '\r\n.\r\n');
      },
    ];
    let step = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      socket.end('QUIT\r\n');
      resolve({ replies, last: replies.at(-1) ?? '' });
    };
    socket.setTimeout(30_000, () => {
      socket.destroy();
      reject(new Error(`SMTP dialogue timed out after ${replies.join(' | ')}`));
    });
    socket.on('error', (error) => {
      if (!done) reject(error);
    });
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      let newline: number;
      while ((newline = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 2);
        if (/^\d{3}-/.test(line)) continue; // a line of a multi-line reply
        replies.push(line);
        if (done) return;
        const code = Number(line.slice(0, 3));
        // 354 asks for the data; anything else of 4xx/5xx ends the transaction.
        if (code >= 400 || step >= steps.length) {
          finish();
          return;
        }
        steps[step++]!();
      }
    });
  });
}

export function dsn(options: {
  returnPath: string;
  recipients: Array<{ address: string; action: string; status: string; diagnostic?: string }>;
  messageId?: string;
  originalTo?: string;
}): string {
  const blocks = options.recipients
    .map((r) =>
      [
        `Final-Recipient: rfc822; ${r.address}`,
        `Original-Recipient: rfc822;${r.address}`,
        `Action: ${r.action}`,
        `Status: ${r.status}`,
        ...(r.diagnostic ? [`Diagnostic-Code: smtp; ${r.diagnostic}`] : []),
      ].join('\r\n'),
    )
    .join('\r\n\r\n');
  return [
    'From: MAILER-DAEMON@mx.reporter.test (Mail Delivery System)',
    `To: ${options.returnPath}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="REPORT"',
    '',
    '--REPORT',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'This is the mail system at host mx.reporter.test. Your message could not be delivered.',
    '',
    '--REPORT',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.reporter.test',
    'Arrival-Date: Thu, 26 Nov 2026 11:00:00 +0000',
    '',
    blocks,
    '',
    '--REPORT',
    'Content-Type: text/rfc822-headers',
    '',
    'From: Shop <shop@example.com>',
    `To: ${options.originalTo ?? options.recipients[0]?.address ?? 'someone@example.net'}`,
    'Subject: Your order',
    ...(options.messageId ? [`Message-ID: ${options.messageId}`] : []),
    '',
    '--REPORT--',
    '',
  ].join('\r\n');
}

export function arf(options: { returnPath: string; recipient: string; messageId?: string }): string {
  return [
    'From: feedback@isp.test',
    `To: ${options.returnPath}`,
    'Subject: FW: Your order',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="ARF"',
    '',
    '--ARF',
    'Content-Type: text/plain',
    '',
    'This is an email abuse report for an email message received from IP 192.0.2.1.',
    '',
    '--ARF',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: IspFeedback/1.0',
    'Version: 1',
    `Original-Rcpt-To: <${options.recipient}>`,
    'Arrival-Date: Thu, 26 Nov 2026 11:00:00 +0000',
    '',
    '--ARF',
    'Content-Type: message/rfc822',
    '',
    'From: Shop <shop@example.com>',
    `To: ${options.recipient}`,
    'Subject: Your order',
    ...(options.messageId ? [`Message-ID: ${options.messageId}`] : []),
    '',
    'Hello',
    '',
    '--ARF--',
    '',
  ].join('\r\n');
}

export interface BounceOutbox {
  running: RunningOutbox;
  environment: OutboxEnvironment;
  bouncePort: number;
  apiKey: string;
  token: string;
  /** Submits over the HTTP API; answers the new mail's id. */
  submit(to: string[], subject?: string): Promise<number>;
  detail(id: number): Promise<MailDetail>;
  waitForStatus(id: number, status: MailStatusCode, what?: string): Promise<void>;
  /** The return path of one recipient of a mail (its place among the mail's distinct envelope addresses; 0: the first). */
  returnPathOf(id: number, recipient?: number): Promise<string>;
  stop(): Promise<void>;
}

export async function startBounceOutbox(env: Record<string, string>): Promise<BounceOutbox> {
  const bouncePort = await freePort();
  const environment = await freshEnvironment({ BOUNCE_DOMAIN, BOUNCE_SMTP_PORT: String(bouncePort), SMTP_PORT: 'off', ...env });
  const running = await startInProcess(environment.env);
  const apiKey = await running.services.auth.createApiKey('shop');
  const login = await running.app.inject({
    method: 'POST',
    url: '/api/v1/login',
    payload: { username: 'ops', password: 'correct horse battery' },
  });
  const token = (login.json() as { data: Array<{ token: string }> }).data[0]!.token;
  const detail = async (id: number) => {
    const response = await running.app.inject({ method: 'GET', url: `/api/v1/mail/${id}`, headers: { authorization: `Token ${token}` } });
    expect(response.statusCode).toBe(200);
    return (response.json() as MailDetailResponse).data[0]!;
  };
  return {
    running,
    environment,
    bouncePort,
    apiKey,
    token,
    async submit(to, subject = 'Your order') {
      const response = await running.app.inject({
        method: 'POST',
        url: '/api/v1/mail',
        headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/json' },
        payload: {
          fromName: 'Shop',
          fromMail: 'shop@example.com',
          to: to.map((recipientMail) => ({ recipientMail })),
          subject,
          text: 'Hello',
        },
      });
      expect(response.statusCode).toBe(202);
      return (response.json() as { data: Array<{ id: number }> }).data[0]!.id;
    },
    detail,
    async waitForStatus(id, status, what) {
      await waitUntil(async () => (await detail(id)).status === status, { what: what ?? `mail ${id} in status ${status}` });
    },
    async returnPathOf(id, recipient = 0) {
      return (await running.services.bounces.returnPaths())!.addressOf(id, recipient);
    },
    async stop() {
      await running.stop();
      await environment.dispose();
    },
  };
}

/** What a mail's reports left behind: reports kept, `bounced` mail events, `mail.bounced` application events. */
export async function reportCountsOfMail(db: Kysely<Database>, id: number) {
  const count = async (table: 'bounce_reports' | 'mail_events' | 'application_events', type?: string) => {
    let query = db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll().as('n'))
      .where('mail_id', '=', id);
    if (type) query = query.where('type', '=', type);
    return Number((await query.executeTakeFirstOrThrow()).n);
  };
  return {
    reports: await count('bounce_reports'),
    bouncedEvents: await count('mail_events', 'bounced'),
    applicationEvents: await count('application_events', 'mail.bounced'),
  };
}
