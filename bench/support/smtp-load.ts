/**
 * An SMTP submission load generator, in a child process so the client does not share the event loop of the
 * server under test. Two clients: one pooled nodemailer transport (`connections` connections, AUTH PLAIN
 * with the API key as password) sending `count` raw messages, `concurrency` at a time, which waits for each
 * reply before the next command; or the pipelining client of smtp-pipeline.ts (RFC 2920, as MTAs send).
 */
import { fork } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import nodemailer from 'nodemailer';
import SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import { benchRawMessage } from './mails.js';
import { runPipelineLoad } from './smtp-pipeline.js';

export interface SmtpLoadSpec {
  client: 'nodemailer' | 'pipelining';
  host: string;
  port: number;
  apiKey: string;
  connections: number;
  concurrency: number;
  count: number;
  firstIndex: number;
  /** Stop early after this long. */
  maxDurationMs: number;
}

export interface SmtpLoadResult {
  sent: number;
  failed: number;
  elapsedMs: number;
  latenciesMs: number[];
  /** The pipelining client's `queued as N` ids, to check that no mail was answered twice. */
  ids?: number[];
  firstError?: string;
}

async function runNodemailerLoad(spec: SmtpLoadSpec): Promise<SmtpLoadResult> {
  const transport = nodemailer.createTransport(
    new SMTPPool({
      pool: true,
      host: spec.host,
      port: spec.port,
      secure: false,
      ignoreTLS: true,
      maxConnections: spec.connections,
      // nodemailer's default of 100 messages per connection is kept: a new session (and AUTH) every 100 mails.
      auth: { user: 'bench', pass: spec.apiKey },
      // Without TCP_NODELAY every message waits ~40 ms for a delayed ACK (see relay-transport.ts).
      getSocket: (options, callback) =>
        callback(null, { connection: net.connect({ host: options.host ?? '127.0.0.1', port: Number(options.port), noDelay: true }) }),
    }),
  );
  transport.on('error', () => undefined);
  const messages = Array.from({ length: spec.count }, (_, i) => benchRawMessage(spec.firstIndex + i));
  const result: SmtpLoadResult = { sent: 0, failed: 0, elapsedMs: 0, latenciesMs: [] };
  let next = 0;
  const started = performance.now();
  const deadline = started + spec.maxDurationMs;
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (next < messages.length && performance.now() < deadline) {
        const message = messages[next++]!;
        const sent = performance.now();
        try {
          await transport.sendMail({ envelope: message.envelope, raw: message.raw });
          result.sent += 1;
        } catch (error) {
          result.failed += 1;
          if (result.firstError === undefined) result.firstError = error instanceof Error ? error.message : String(error);
        }
        result.latenciesMs.push(performance.now() - sent);
      }
    }),
  );
  result.elapsedMs = performance.now() - started;
  transport.close();
  return result;
}

export function runSmtpLoadInChild(spec: SmtpLoadSpec): Promise<SmtpLoadResult> {
  const child = fork(fileURLToPath(import.meta.url), ['--child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    let settled = false;
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!settled) reject(new Error(`the SMTP load generator exited without a result (${code})`));
    });
    child.once('message', (message: { result?: SmtpLoadResult; error?: string }) => {
      settled = true;
      child.disconnect();
      if (message.result) resolve(message.result);
      else reject(new Error(message.error ?? 'SMTP load generator failed'));
    });
    child.send(spec);
  });
}

if (process.argv.includes('--child') && process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.once('message', (spec: SmtpLoadSpec) => {
    (spec.client === 'pipelining' ? runPipelineLoad(spec) : runNodemailerLoad(spec)).then(
      (result) => process.send?.({ result }),
      (error: unknown) => process.send?.({ error: error instanceof Error ? error.stack : String(error) }),
    );
  });
}
