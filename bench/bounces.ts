/**
 * Bounce listener: reports per second kept and applied by the real bounce listener
 * (start(config) in this process with BOUNCE_DOMAIN and a free BOUNCE_SMTP_PORT, WORKER=off), from a pooled
 * nodemailer client in a child process: `--connections` sessions, `--concurrency` reports in flight, `--count`
 * RFC 3464 hard bounces, each for its own ProviderSent mail (submitted over HTTP, then moved to ProviderSent).
 * A report counts when the listener answered 250 after DATA, i.e. it is stored, matched, its recipient marked
 * bounced, its address suppressed and its mail moved to ProviderError. Goal: ≥ 500 reports/s on SQLite.
 *
 *   npx tsx bench/bounces.ts [--engine sqlite|postgres] [--count 3000] [--connections 8] [--concurrency 32]
 */
import { fork } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { MailStatus } from '@outbox/contract';
import nodemailer from 'nodemailer';
import SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import { applyTransitions } from '../server/src/mail/write/apply.js';
import { freePort } from '../server/test/support/net.js';
import {
  cpuPercent,
  cpuTimeMs,
  formatNumber,
  printSetup,
  printTable,
  rate,
  runMain,
  summarize,
  verdict,
  withTimeout,
  writeResult,
} from './support/common.js';
import { engineOption, parseBenchArgs, wholeNumberOption } from './support/options.js';
import { startBenchOutbox } from './support/outbox.js';

interface LoadSpec {
  port: number;
  connections: number;
  concurrency: number;
  reports: Array<{ to: string; raw: string }>;
  maxDurationMs: number;
}
interface LoadResult {
  sent: number;
  failed: number;
  elapsedMs: number;
  latenciesMs: number[];
  firstError?: string;
}

function dsnFor(returnPath: string, recipient: string): string {
  return [
    'From: MAILER-DAEMON@mx.bench.test',
    `To: ${returnPath}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="R"',
    '',
    '--R',
    'Content-Type: text/plain',
    '',
    'Your message could not be delivered.',
    '--R',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.bench.test',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: failed',
    'Status: 5.1.1',
    `Diagnostic-Code: smtp; 550 5.1.1 <${recipient}>: user unknown`,
    '',
    '--R',
    'Content-Type: text/rfc822-headers',
    '',
    'From: Bench <bench@example.com>',
    `To: ${recipient}`,
    'Subject: bench',
    '',
    '--R--',
    '',
  ].join('\r\n');
}

async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const transport = nodemailer.createTransport(
    new SMTPPool({
      pool: true,
      host: '127.0.0.1',
      port: spec.port,
      secure: false,
      ignoreTLS: true,
      maxConnections: spec.connections,
      getSocket: (options, callback) =>
        callback(null, { connection: net.connect({ host: '127.0.0.1', port: Number(options.port), noDelay: true }) }),
    }),
  );
  transport.on('error', () => undefined);
  const result: LoadResult = { sent: 0, failed: 0, elapsedMs: 0, latenciesMs: [] };
  let next = 0;
  const started = performance.now();
  const deadline = started + spec.maxDurationMs;
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (next < spec.reports.length && performance.now() < deadline) {
        const report = spec.reports[next++]!;
        const sent = performance.now();
        try {
          await transport.sendMail({ envelope: { from: 'mailer-daemon@mx.bench.test', to: [report.to] }, raw: report.raw });
          result.sent += 1;
        } catch (error) {
          result.failed += 1;
          result.firstError ??= error instanceof Error ? error.message : String(error);
        }
        result.latenciesMs.push(performance.now() - sent);
      }
    }),
  );
  result.elapsedMs = performance.now() - started;
  transport.close();
  return result;
}

function runLoadInChild(spec: LoadSpec): Promise<LoadResult> {
  const child = fork(fileURLToPath(import.meta.url), ['--child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    let settled = false;
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!settled) reject(new Error(`the bounce load generator exited without a result (${code})`));
    });
    child.once('message', (message: { result?: LoadResult; error?: string }) => {
      settled = true;
      child.disconnect();
      if (message.result) resolve(message.result);
      else reject(new Error(message.error ?? 'bounce load generator failed'));
    });
    child.send(spec);
  });
}

async function main(): Promise<void> {
  const { engine, count, connections, concurrency } = parseBenchArgs({
    engine: engineOption(),
    count: wholeNumberOption(3000),
    connections: wholeNumberOption(8),
    concurrency: wholeNumberOption(32),
  });
  const warmup = Math.min(300, count);
  const MAX_MS = 45_000;
  const setup = printSetup('Bounce listener: RFC 3464 hard bounces kept and applied (250 after DATA) per second', {
    engine,
    count,
    connections,
    concurrency,
    worker: 'off',
    server: 'start(config) in this process',
    client: 'nodemailer pool in a child process, no AUTH, TCP_NODELAY',
  });

  const port = await freePort();
  const outbox = await startBenchOutbox({
    engine,
    label: 'bounces',
    env: { WORKER: 'off', SMTP_PORT: 'off', BOUNCE_DOMAIN: 'bounce.bench.test', BOUNCE_SMTP_PORT: String(port) },
  });
  try {
    // The mails the reports are about: submitted over HTTP, then moved to ProviderSent as the worker would.
    const total = warmup + count;
    const ids: number[] = [];
    for (let start = 0; start < total; start += 100) {
      const batch = Array.from({ length: Math.min(100, total - start) }, (_, i) => ({
        fromMail: 'bench@example.com',
        to: [{ recipientMail: `r${start + i}@example.net` }],
        subject: 'bench',
        text: 'Hello',
      }));
      const response = await fetch(`${outbox.baseUrl}/api/v1/mail`, {
        method: 'POST',
        headers: { authorization: `Token ${outbox.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(batch),
      });
      if (response.status !== 202) throw new Error(`submission answered ${response.status}: ${await response.text()}`);
      ids.push(...((await response.json()) as { data: Array<{ id: number }> }).data.map((m) => m.id));
    }
    const db = outbox.running.store.db;
    await db.transaction().execute(async (trx) => {
      await trx.updateTable('mail_recipients').set({ outcome: 'accepted' }).where('kind', '=', 'envelope').execute();
      await applyTransitions(
        trx,
        ids.map((id) => ({ id, from: [MailStatus.Queued], to: MailStatus.ProviderSent, at: Date.now(), event: null })),
      );
    });
    const codec = (await outbox.running.services.bounces.returnPaths())!;
    const reports = ids.map((id, i) => {
      const to = codec.addressOf(id, 0);
      return { to, raw: dsnFor(to, `r${i}@example.net`) };
    });

    await withTimeout(
      runLoadInChild({ port, connections, concurrency, reports: reports.slice(0, warmup), maxDurationMs: 60_000 }),
      90_000,
      'warm-up',
    );
    const cpuBefore = cpuTimeMs();
    const result = await withTimeout(
      runLoadInChild({ port, connections, concurrency, reports: reports.slice(warmup), maxDurationMs: MAX_MS }),
      MAX_MS + 30_000,
      'bounce load',
    );
    const cpuAfter = cpuTimeMs();
    const serverCpu = cpuPercent(cpuBefore, cpuAfter, result.elapsedMs);
    // The server's CPU per report: what bounds it on an idle machine (the listener runs on one thread).
    const cpuUsPerReport =
      cpuBefore !== undefined && cpuAfter !== undefined && result.sent > 0
        ? Math.round(((cpuAfter - cpuBefore) * 1000) / result.sent)
        : undefined;
    const latency = summarize(result.latenciesMs);
    const reportsPerSecond = rate(result.sent, result.elapsedMs);
    const counts = await getStatusCounts(db);
    const kept = await db
      .selectFrom('bounce_reports')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const met = engine !== 'sqlite' || reportsPerSecond >= 500;

    console.log('');
    printTable(
      [
        'path',
        'conns',
        'in flight',
        'sent',
        'failed',
        'seconds',
        'reports/s',
        'p50 ms',
        'p99 ms',
        'server CPU',
        'CPU µs/report',
        'goal (SQLite)',
      ],
      [
        [
          'bounce listener (DATA, parse, match, apply, 250)',
          connections,
          concurrency,
          result.sent,
          result.failed,
          (result.elapsedMs / 1000).toFixed(2),
          formatNumber(reportsPerSecond),
          latency.p50,
          latency.p99,
          `${serverCpu ?? '?'}%`,
          cpuUsPerReport ?? '?',
          engine === 'sqlite' ? `≥ 500/s ${verdict(met)}` : 'n/a',
        ],
      ],
    );
    if (result.firstError) console.log(`  first failure: ${result.firstError}`);
    console.log(
      `  kept reports: ${Number(kept.n)}; ProviderError: ${counts.get(MailStatus.ProviderError) ?? 0}; ProviderSent: ${counts.get(MailStatus.ProviderSent) ?? 0} (warm-up included)`,
    );
    const file = writeResult('bounces', setup, {
      sent: result.sent,
      failed: result.failed,
      seconds: result.elapsedMs / 1000,
      reportsPerSecond,
      latencyMs: latency,
      serverCpuPercent: serverCpu,
      serverCpuUsPerReport: cpuUsPerReport,
      keptReports: Number(kept.n),
    });
    console.log(`\nresult: ${file}`);
  } finally {
    await outbox.close();
  }
}

if (process.argv.includes('--child')) {
  process.once('message', (spec: LoadSpec) => {
    runLoad(spec).then(
      (result) => process.send?.({ result }),
      (error: unknown) => process.send?.({ error: error instanceof Error ? error.stack : String(error) }),
    );
  });
} else {
  runMain(main);
}
