/**
 * Webhook delivery's cost: N mails delivered by the worker, as main.ts builds it, with
 * webhooks off and then with one endpoint subscribed to every event (a receiver on loopback, in its own
 * process, answering 200 at once), on each engine. Reports the mails' throughput both ways and the loss
 * (goal ≤ 15 %), events per second, this process's CPU µs per event (on minus off), and the lag of the last
 * event's arrival after the last mail's ProviderSent (goal ≤ 2 s).
 *
 *   npx tsx bench/webhooks.ts [--count 10000] [--engine auto|sqlite|postgres|all] [--rounds 1]
 *
 * The mails are queued first (WORKER off), so their `mail.queued` events wait too; the clock starts when the
 * worker and the dispatcher start. Events: one `mail.queued` and one `mail.sent` per mail.
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { MailStatus } from '@outbox/contract';
import { sql } from 'kysely';
import { systemClock } from '../server/src/clock.js';
import { loadConfig } from '../server/src/config.js';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import { createWebhookDispatcher } from '../server/src/webhooks/dispatcher.js';
import { cpuTimeMs, formatNumber, printSetup, printTable, rate, runMain, sleep, verdict, writeResult } from './support/common.js';
import { createBenchWorker } from './support/bench-worker.js';
import { queueMails } from './support/mails.js';
import { startBenchOutbox, type Engine } from './support/outbox.js';
import { enginesOption, parseBenchArgs, resolveEngines, wholeNumberOption } from './support/options.js';
import { startSinkProcess } from './support/sink-process.js';

const GOAL_LOSS = 0.15;
const GOAL_LAG_MS = 2000;
const TIMEOUT_MS = 180_000;

// ---- the receiver, in a child process ------------------------------------------------------------------
if (process.argv.includes('--receiver')) {
  let count = 0;
  let lastAt = 0;
  const server = http.createServer((req, res) => {
    if (req.method === 'GET') {
      res.end(JSON.stringify({ count, lastAt }));
      return;
    }
    req.resume();
    req.on('end', () => {
      count += 1;
      lastAt = Date.now();
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
  process.on('message', (message: { type: string }) => {
    if (message.type === 'reset') {
      count = 0;
      lastAt = 0;
      process.send?.({ reset: true });
    }
  });
  process.on('disconnect', () => process.exit(0));
} else {
  runMain(main);
}

interface Receiver {
  url: string;
  pid: number;
  stats(): Promise<{ count: number; lastAt: number }>;
  reset(): Promise<void>;
  stop(): void;
}

function startReceiverProcess(): Promise<Receiver> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--receiver'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (message: { port: number }) => {
      const base = `http://127.0.0.1:${message.port}`;
      resolve({
        url: `${base}/hooks`,
        pid: child.pid!,
        stats: async () => (await (await fetch(`${base}/stats`)).json()) as { count: number; lastAt: number },
        reset: () =>
          new Promise<void>((done) => {
            child.once('message', () => done());
            child.send({ type: 'reset' });
          }),
        stop: () => child.kill(),
      });
    });
  });
}

interface Run {
  engine: Engine;
  webhooks: boolean;
  mails: number;
  drainMs: number;
  events: number;
  /** From the start until the last event arrived. */
  eventsMs: number;
  lagMs: number | null;
  cpuMs: number;
}

async function run(engine: Engine, webhooks: boolean, n: number, sinkUrl: string, receiver: Receiver): Promise<Run> {
  const config = loadConfig({});
  const outbox = await startBenchOutbox({ engine, label: 'webhooks', env: { WORKER: 'off', WEBHOOK_ALLOW_PRIVATE: 'true' } });
  try {
    const { store, services } = outbox.running;
    const principal = (await services.auth.findApiKeyPrincipal(outbox.apiKey))!;
    if (webhooks) await services.webhooks.createEndpoint({ url: receiver.url, description: 'bench: every event' }, 'bench');
    await queueMails(services.submissions, principal, n);
    await receiver.reset();
    // As main.ts builds it (bench/support/bench-worker.ts).
    const { worker, transport } = createBenchWorker({
      store,
      config,
      relayUrl: sinkUrl,
      onChange: (ids) => services.mails.notify({ type: 'updated', ids }),
    });
    // As main.ts builds it.
    const dispatcher = webhooks
      ? createWebhookDispatcher({
          store,
          clock: systemClock,
          timeoutMs: config.webhookTimeoutMs,
          schedule: config.webhookRetrySchedule,
          allowPrivate: true,
          concurrency: config.webhookConcurrency,
          leaseMs: Math.max(config.leaseSeconds * 1000, 2 * config.webhookTimeoutMs + 5_000),
        })
      : undefined;
    const cpuBefore = cpuTimeMs()!;
    const started = performance.now();
    const startedAt = Date.now();
    dispatcher?.start();
    worker.start();
    let counts = await getStatusCounts(store.db);
    while ((counts.get(MailStatus.ProviderSent) ?? 0) < n) {
      if (performance.now() - started > TIMEOUT_MS) throw new Error(`draining ${n} mails on ${engine} took over ${TIMEOUT_MS / 1000} s`);
      await sleep(25);
      counts = await getStatusCounts(store.db);
    }
    const drainMs = performance.now() - started;
    const expected = webhooks ? 2 * n : 0;
    let stats = await receiver.stats();
    while (stats.count < expected) {
      if (performance.now() - started > TIMEOUT_MS)
        throw new Error(`${stats.count} of ${expected} events arrived in ${TIMEOUT_MS / 1000} s`);
      await sleep(25);
      stats = await receiver.stats();
    }
    const eventsMs = webhooks ? stats.lastAt - startedAt : 0;
    const cpuMs = cpuTimeMs()! - cpuBefore;
    const lastSent = await sql<{ at: number | string }>`select max(provider_sent_at) as at from mails`.execute(store.db);
    const lagMs = webhooks ? stats.lastAt - Number(lastSent.rows[0]!.at) : null;
    await dispatcher?.stop();
    await worker.stop();
    transport.close();
    return { engine, webhooks, mails: n, drainMs, events: stats.count, eventsMs, lagMs, cpuMs };
  } finally {
    await outbox.close();
  }
}

async function main(): Promise<void> {
  const {
    count,
    engine: engineChoice,
    rounds,
  } = parseBenchArgs({
    count: wholeNumberOption(10_000),
    engine: enginesOption('auto', ['auto', 'sqlite', 'postgres', 'all']),
    rounds: wholeNumberOption(1),
  });
  const engines = await resolveEngines(engineChoice, { withoutPostgres: 'fail' });
  const config = loadConfig({});
  const setup = printSetup('Webhooks: N mails delivered with webhooks off, then with one endpoint subscribed to every event', {
    engine: engines.join('+'),
    count,
    rounds,
    workerConcurrency: config.workerConcurrency,
    webhookConcurrency: config.webhookConcurrency,
    sink: 'capture relay (store:false) in a child process',
    receiver: 'node:http answering 200, in a child process',
  });
  const sink = await startSinkProcess();
  const receiver = await startReceiverProcess();
  const runs: Run[] = [];
  try {
    for (let round = 0; round < rounds; round += 1)
      for (const engine of engines) {
        runs.push(await run(engine, false, count, sink.url, receiver));
        runs.push(await run(engine, true, count, sink.url, receiver));
      }
  } finally {
    receiver.stop();
    await sink.stop();
  }
  console.log('');
  printTable(
    ['engine', 'webhooks', 'mails', 'drain s', 'mails/s', 'events', 'events/s', 'CPU ms', 'last event after last ProviderSent'],
    runs.map((r) => [
      r.engine,
      r.webhooks ? 'on' : 'off',
      r.mails,
      (r.drainMs / 1000).toFixed(2),
      formatNumber(rate(r.mails, r.drainMs)),
      r.events,
      r.webhooks ? formatNumber(rate(r.events, r.eventsMs)) : '-',
      Math.round(r.cpuMs),
      r.lagMs === null ? '-' : `${r.lagMs} ms`,
    ]),
  );
  const summary = engines.flatMap((engine) => {
    const pairs: Array<{ off: Run; on: Run }> = [];
    const of = runs.filter((r) => r.engine === engine);
    for (let i = 0; i + 1 < of.length; i += 2) pairs.push({ off: of[i]!, on: of[i + 1]! });
    return pairs.map(({ off, on }) => {
      const loss = 1 - rate(on.mails, on.drainMs) / rate(off.mails, off.drainMs);
      const cpuPerEvent = on.events > 0 ? ((on.cpuMs - off.cpuMs) * 1000) / on.events : NaN;
      return {
        engine,
        mailsPerSecondOff: rate(off.mails, off.drainMs),
        mailsPerSecondOn: rate(on.mails, on.drainMs),
        loss,
        eventsPerSecond: rate(on.events, on.eventsMs),
        cpuMicrosecondsPerEvent: Math.round(cpuPerEvent),
        lagMs: on.lagMs,
        met: { loss: loss <= GOAL_LOSS, lag: on.lagMs !== null && on.lagMs <= GOAL_LAG_MS },
      };
    });
  });
  console.log('');
  printTable(
    ['engine', 'mails/s off → on', `loss (goal ≤ ${GOAL_LOSS * 100} %)`, 'events/s', 'CPU µs/event', `lag (goal ≤ ${GOAL_LAG_MS} ms)`],
    summary.map((s) => [
      s.engine,
      `${formatNumber(s.mailsPerSecondOff)} → ${formatNumber(s.mailsPerSecondOn)}`,
      `${(s.loss * 100).toFixed(1)} % ${verdict(s.met.loss)}`,
      formatNumber(s.eventsPerSecond),
      s.cpuMicrosecondsPerEvent,
      `${s.lagMs} ms ${verdict(s.met.lag)}`,
    ]),
  );
  const file = writeResult('webhooks', setup, { goal: { loss: GOAL_LOSS, lagMs: GOAL_LAG_MS }, summary, runs });
  console.log(`\nresults: ${file}`);
  process.exit(0);
}
