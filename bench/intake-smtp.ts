/**
 * SMTP intake (issue 3, Benchmarks): mails per second accepted by the real SMTP submission listener
 * (start(config) in this process with a free SMTP_PORT, WORKER=off), from a pooled nodemailer client in a
 * child process: `--connections` sessions (AUTH PLAIN, the API key as password), `--concurrency` messages in
 * flight, `--count` raw messages. A mail counts when the server answered 250 after DATA, i.e. it is stored.
 * There is no goal in the issue; the figure is reported beside HTTP intake.
 *
 *   npx tsx bench/intake-smtp.ts [--engine sqlite|postgres] [--count 5000] [--connections 8] [--concurrency 32]
 */
import { parseArgs } from 'node:util';
import { MailStatus } from '@outbox/contract';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
// start() needs a fixed SMTP_PORT (0 there means "off"), so the benchmark picks a free one first.
import { freePort } from '../server/test/support/net.js';
import {
  cpuPercent,
  cpuTimeMs,
  describeSetup,
  formatNumber,
  printTable,
  rate,
  setupLine,
  summarize,
  warnIfBusy,
  withTimeout,
  writeResult,
} from './support/common.js';
import { startBenchOutbox, type Engine } from './support/outbox.js';
import { runSmtpLoadInChild } from './support/smtp-load.js';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'sqlite' },
    count: { type: 'string', default: '5000' },
    connections: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '32' },
  },
});
const engine = values.engine as Engine;
if (engine !== 'sqlite' && engine !== 'postgres') throw new Error('--engine is sqlite or postgres');
const count = Number(values.count);
const connections = Number(values.connections);
const concurrency = Number(values.concurrency);
const MAX_MS = 45_000;

async function main(): Promise<void> {
  const setup = describeSetup({
    engine,
    count,
    connections,
    concurrency,
    worker: 'off',
    server: 'start(config) in this process',
    client: 'nodemailer pool in a child process, AUTH PLAIN, TCP_NODELAY',
  });
  console.log('SMTP intake: messages accepted (250 after DATA) per second by the submission listener');
  console.log(setupLine(setup));
  warnIfBusy(setup);

  const smtpPort = await freePort();
  const outbox = await startBenchOutbox({ engine, label: 'intake_smtp', env: { WORKER: 'off', SMTP_PORT: String(smtpPort) } });
  try {
    const spec = {
      host: '127.0.0.1',
      port: outbox.running.smtpPort!,
      apiKey: outbox.apiKey,
      connections,
      concurrency,
      maxDurationMs: MAX_MS,
    };
    // Warm-up: JIT, prepared statements, sessions.
    await withTimeout(runSmtpLoadInChild({ ...spec, count: Math.min(500, count), firstIndex: 0 }), 60_000, 'SMTP warm-up');
    const cpuBefore = cpuTimeMs();
    const result = await withTimeout(runSmtpLoadInChild({ ...spec, count, firstIndex: 1_000_000 }), MAX_MS + 30_000, 'SMTP intake');
    const cpuAfter = cpuTimeMs();
    const serverCpu = cpuPercent(cpuBefore, cpuAfter, result.elapsedMs);
    const cpuUsPerMail =
      cpuBefore !== undefined && cpuAfter !== undefined && result.sent > 0
        ? Math.round(((cpuAfter - cpuBefore) * 1000) / result.sent)
        : undefined;
    const latency = summarize(result.latenciesMs);
    const mailsPerSecond = rate(result.sent, result.elapsedMs);
    const queued = (await getStatusCounts(outbox.running.store.db)).get(MailStatus.Queued) ?? 0;

    console.log('');
    printTable(
      ['path', 'conns', 'in flight', 'sent', 'failed', 'seconds', 'mails/s', 'p50 ms', 'p99 ms', 'server CPU', 'CPU µs/mail'],
      [
        [
          'SMTP submission (AUTH, DATA, 250)',
          connections,
          concurrency,
          result.sent,
          result.failed,
          (result.elapsedMs / 1000).toFixed(2),
          formatNumber(mailsPerSecond),
          latency.p50,
          latency.p99,
          `${serverCpu ?? '?'}%`,
          cpuUsPerMail ?? '?',
        ],
      ],
    );
    if (result.firstError) console.log(`  first failure: ${result.firstError}`);
    if (result.sent < count)
      console.log(`  stopped after ${Math.round(MAX_MS / 1000)} s with ${count - result.sent - result.failed} messages not sent`);
    console.log(`  Queued counter after the run: ${queued} (warm-up included)`);

    const file = writeResult('intake-smtp', setup, {
      sent: result.sent,
      failed: result.failed,
      seconds: result.elapsedMs / 1000,
      mailsPerSecond,
      latencyMs: latency,
      serverCpuPercent: serverCpu,
      serverCpuUsPerMail: cpuUsPerMail,
      queuedAfter: queued,
    });
    console.log(`\nresult: ${file}`);
  } finally {
    await outbox.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
