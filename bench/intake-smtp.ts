/**
 * SMTP intake (docs/benchmarks.md): mails per second accepted by the real SMTP
 * submission listener (start(config) in this process with a free SMTP_PORT, WORKER=off), from a client in a
 * child process, `--connections` sessions with AUTH PLAIN (the API key as password), `--count` raw messages:
 * - `nodemailer`: a pooled nodemailer transport, `--concurrency` messages in flight, waiting for each reply;
 * - `pipelining`: the RFC 2920 client of support/smtp-pipeline.ts (MAIL FROM, RCPT TO and DATA in one write,
 *   then the message with the next transaction's commands), one message in flight per session, every reply
 *   checked in order.
 * A mail counts when the server answered 250 after DATA, i.e. it is stored. After each run the Queued
 * counter must have grown by exactly the mails counted, and the pipelining client's ids must be distinct,
 * or the benchmark fails instead of printing a figure.
 *
 *   npx tsx bench/intake-smtp.ts [--engine sqlite|postgres] [--client both|nodemailer|pipelining] [--count 5000]
 *     [--connections 8] [--concurrency 32] [--profile]
 *
 * `--profile` writes a CPU profile of the server's thread during each measured run (bench/results/profiles/)
 * and prints its summary: self time by package and by function.
 */
import path from 'node:path';
import { MailStatus } from '@outbox/contract';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
// start() needs a fixed SMTP_PORT (0 there means "off"), so the benchmark picks a free one first.
import { freePort } from '../server/test/support/net.js';
import {
  cpuPercent,
  cpuTimeMs,
  formatNumber,
  printSetup,
  printTable,
  rate,
  resultsDir,
  runMain,
  summarize,
  withTimeout,
  writeResult,
} from './support/common.js';
import { startCpuProfile } from './support/cpu-profile.js';
import { choiceOption, engineOption, flagOption, parseBenchArgs, wholeNumberOption } from './support/options.js';
import { startBenchOutbox, type BenchOutbox } from './support/outbox.js';
import { runSmtpLoadInChild } from './support/smtp-load.js';

const {
  engine,
  client: clientChoice,
  count,
  connections,
  concurrency,
  profile: isProfiling,
} = parseBenchArgs({
  engine: engineOption(),
  client: choiceOption('both', ['both', 'nodemailer', 'pipelining']),
  count: wholeNumberOption(5000),
  connections: wholeNumberOption(8),
  concurrency: wholeNumberOption(32),
  profile: flagOption(),
});
const clients = clientChoice === 'both' ? (['pipelining', 'nodemailer'] as const) : [clientChoice];
const MAX_MS = 45_000;

interface ClientFigures {
  client: string;
  sent: number;
  failed: number;
  seconds: number;
  mailsPerSecond: number;
  latencyMs: ReturnType<typeof summarize>;
  serverCpuPercent: number | undefined;
  serverCpuUsPerMail: number | undefined;
  queuedDelta: number;
}

/** One measured run of a client after its warm-up; throws when the store and the replies disagree. */
async function measure(outbox: BenchOutbox, client: 'nodemailer' | 'pipelining', firstIndex: number): Promise<ClientFigures> {
  const spec = {
    client,
    host: '127.0.0.1',
    port: outbox.running.smtpPort!,
    apiKey: outbox.apiKey,
    connections,
    concurrency,
    maxDurationMs: MAX_MS,
  };
  const queuedNow = async () => (await getStatusCounts(outbox.running.store.db)).get(MailStatus.Queued) ?? 0;
  // Warm-up: JIT, prepared statements, sessions.
  await withTimeout(runSmtpLoadInChild({ ...spec, count: Math.min(500, count), firstIndex }), 60_000, `${client} warm-up`);
  const queuedBefore = await queuedNow();
  const stopProfile = isProfiling ? await startCpuProfile() : undefined;
  const cpuBefore = cpuTimeMs();
  const result = await withTimeout(
    runSmtpLoadInChild({ ...spec, count, firstIndex: firstIndex + 100_000 }),
    MAX_MS + 30_000,
    `${client} run`,
  );
  const cpuAfter = cpuTimeMs();
  if (stopProfile) {
    const profile = await stopProfile();
    const file = profile.file(
      `intake-smtp-${engine}-${client}-${new Date().toISOString().replace(/[:.]/g, '-')}`,
      path.join(resultsDir, 'profiles'),
    );
    console.log(`CPU profile of the server's thread, ${client} client on ${engine}: ${file}\n${profile.summary}\n`);
  }
  const queuedDelta = (await queuedNow()) - queuedBefore;
  if (result.firstError) console.log(`  ${client}: first failure: ${result.firstError}`);
  if (result.sent + result.failed < count)
    console.log(`  ${client}: stopped after ${Math.round(MAX_MS / 1000)} s with ${count - result.sent - result.failed} messages not sent`);
  // A 250 without a stored mail, or a stored mail answered twice, would make the rate a lie.
  if (queuedDelta !== result.sent)
    throw new Error(`${client}: ${result.sent} messages answered 250 but the Queued counter grew by ${queuedDelta}`);
  if (result.ids && new Set(result.ids).size !== result.sent)
    throw new Error(`${client}: ${result.sent} messages answered 250 with only ${new Set(result.ids).size} distinct ids`);
  return {
    client,
    sent: result.sent,
    failed: result.failed,
    seconds: result.elapsedMs / 1000,
    mailsPerSecond: rate(result.sent, result.elapsedMs),
    latencyMs: summarize(result.latenciesMs),
    serverCpuPercent: cpuPercent(cpuBefore, cpuAfter, result.elapsedMs),
    serverCpuUsPerMail:
      cpuBefore !== undefined && cpuAfter !== undefined && result.sent > 0
        ? Math.round(((cpuAfter - cpuBefore) * 1000) / result.sent)
        : undefined,
    queuedDelta,
  };
}

async function main(): Promise<void> {
  const setup = printSetup('SMTP intake: messages accepted (250 after DATA) per second by the submission listener', {
    engine,
    count,
    connections,
    concurrency,
    clients: clients.join('+'),
    worker: 'off',
    server: 'start(config) in this process',
    client: 'in a child process, AUTH PLAIN, TCP_NODELAY; nodemailer pool or RFC 2920 pipelining over net.Socket',
  });

  const smtpPort = await freePort();
  const outbox = await startBenchOutbox({ engine, label: 'intake_smtp', env: { WORKER: 'off', SMTP_PORT: String(smtpPort) } });
  try {
    const figures: ClientFigures[] = [];
    for (const [i, client] of clients.entries()) figures.push(await measure(outbox, client, i * 1_000_000));
    console.log('');
    printTable(
      ['client', 'conns', 'in flight', 'sent', 'failed', 'seconds', 'mails/s', 'p50 ms', 'p99 ms', 'server CPU', 'CPU µs/mail'],
      figures.map((f) => [
        f.client,
        connections,
        f.client === 'pipelining' ? connections : concurrency,
        f.sent,
        f.failed,
        f.seconds.toFixed(2),
        formatNumber(f.mailsPerSecond),
        f.latencyMs.p50,
        f.latencyMs.p99,
        `${f.serverCpuPercent ?? '?'}%`,
        f.serverCpuUsPerMail ?? '?',
      ]),
    );
    console.log('  every 250 checked against the Queued counter (and, pipelining, distinct ids)');
    const file = writeResult('intake-smtp', setup, Object.fromEntries(figures.map((f) => [f.client, f])));
    console.log(`\nresult: ${file}`);
  } finally {
    await outbox.close();
  }
}

runMain(main);
