/**
 * The operators' console list under delivery load: the random list workload of bench/list.ts (`--random`)
 * asked over HTTP while the delivery worker, in the same process as the server, drains a queue into a fast
 * sink as fast as it can. Goal: list p99 ≤ 50 ms while delivering ≥ 1,000 mails/s.
 *
 *   npx tsx bench/mixed.ts [--count 1000000] [--engine sqlite|postgres|all] [--queries 300] [--seed 20] [--deliver 20000]
 *                          [--concurrency N] [--tag NAME] [--cold]
 *
 * - The store is bench/list.ts's kept store of `--count` demo mails (bench/support/demo-store.ts
 *   `prepareDemoStore`: bench/results/cache/list-sqlite-<count>/ or the PostgreSQL database bench_list_<count>,
 *   filled on the first run, reused after; pass the same --tag). The run works on a copy of it (the SQLite
 *   files copied to a temporary folder; a PostgreSQL database made with that one as its template, dropped
 *   afterwards): the kept store must keep exactly `--count` mails and its statuses for bench/list.ts. The copy
 *   is read into the page cache first (`warmDemoStore`; `--cold` skips it).
 * - The server is `start(config)` in this process with WORKER=off (bench/support/outbox.ts); `--deliver` more
 *   mails (bench/support/mails.ts `benchMail`) are queued through the submission service in batches of 500, as
 *   bench/delivery.ts queues them. The search terms and the newest received date the queries use are taken
 *   before that, so the queries are the ones bench/list.ts --random asks with the same --seed.
 * - The sink is the embedded capture relay (`store: false`) in its own process (bench/support/sink-process.ts).
 *   The worker is built as bench/delivery.ts builds it (as server/src/main.ts does), from a config made by
 *   loadConfig (WORKER_CONCURRENCY, 50 by default, or --concurrency; the relay pool sized as main.ts sizes it),
 *   in this process beside the server, as a single instance runs.
 * - Once the worker has sent its first mails (at most 2 s after its start), `--queries` requests of page 1
 *   (limit 50) are asked one after the other (a random sort and order, half with a status subset, 60% with a
 *   search term from a random frequency decade, 30% with a date range; 20 warm-up queries of another seed come
 *   before the worker starts), each request's latency recorded.
 * - The delivery rate is the ProviderSent counter's rise (`getStatusCounts`) over the same window ÷ its seconds.
 *   A poll of the counters every 50 ms notices when the queued mails are all handled: the window ends there,
 *   the queries asked after it are reported apart (an idle list, not one under load) and the output says the
 *   deliveries ran out; queue more with --deliver.
 * - CPU beside the figures: this process (server, worker and client share it), the sink's, and on PostgreSQL
 *   the database's backends, in % of one core from the first query to the last answer. The machine has 2 cores,
 *   shared by all three.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { MailStatus } from '@outbox/contract';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import { SQLITE_FILE_NAME } from '../server/src/store/connection.js';
import {
  cpuPercent,
  cpuTimeMs,
  formatNumber,
  httpGet,
  type LatencySummary,
  makeTempDir,
  printSetup,
  printTable,
  removeDir,
  runMain,
  sleep,
  summarize,
  verdict,
  writeResult,
} from './support/common.js';
import { prepareDemoStore, warmDemoStore } from './support/demo-store.js';
import { listUrl, newestReceivedAt, randomQuery, searchTerms, seededRandom, type RandomQuery } from './support/random-list.js';
import { queueMails } from './support/mails.js';
import { operatorToken, startBenchOutbox, type Engine } from './support/outbox.js';
import {
  enginesOption,
  flagOption,
  parseBenchArgs,
  resolveEngines,
  tagOption,
  wholeNumberOption,
  workerConcurrencyOption,
} from './support/options.js';
import { postgresAdminUrl, postgresBackendCpu } from './support/postgres.js';
import { startSinkProcess } from './support/sink-process.js';
import { benchWorkerConfig, createBenchWorker, relayPoolSize } from './support/bench-worker.js';

const GOAL_P99_MS = 50;
const GOAL_MAILS_PER_SECOND = 1_000;
const LIMIT = 50;
const POLL_MS = 50;
/** The queries start once the worker has sent this many mails (its pool connected, its first claims done), or after RAMP_MAX_MS. */
const RAMP_MAX_MS = 2_000;

const {
  count,
  engine: engineChoice,
  queries: queryCount,
  seed,
  deliver,
  concurrency: concurrencyText,
  tag,
  cold: isCold,
} = parseBenchArgs({
  count: wholeNumberOption(1_000_000),
  engine: enginesOption('all', ['sqlite', 'postgres', 'all']),
  queries: wholeNumberOption(300),
  seed: wholeNumberOption(20, { min: 0 }),
  deliver: wholeNumberOption(20_000),
  concurrency: workerConcurrencyOption(),
  /** The kept store's tag, as bench/list.ts --tag. */
  tag: tagOption(),
  /** Skip reading the store into the page cache first. */
  cold: flagOption(),
});
const config = benchWorkerConfig(concurrencyText);
// As bench/delivery.ts and main.ts size the relay pool.
const concurrency = config.workerConcurrency;
const maxConnections = relayPoolSize(concurrency);
const rampSent = 2 * concurrency;

const describeQuery = (a: RandomQuery & { ms: number }) =>
  `${a.ms.toFixed(1)} ms: sort=${a.sort} ${a.order}${a.statuses ? ` status=${a.statuses.join(',')}` : ''}${a.q ? ` q=${a.q} (${a.decade})` : ''}${a.lastHours !== undefined ? ` last ${a.lastHours} h` : ''}`;

// ---------------------------------------------------------------------------------------------------------

/** A throwaway copy of the kept store (see the header), removed by drop(). */
async function copyStore(
  engine: Engine,
  kept: { dataDir: string; databaseUrl: string | undefined },
): Promise<{ dataDir: string | undefined; databaseUrl: string | undefined; seconds: number; drop(): Promise<void> }> {
  const started = performance.now();
  if (engine === 'sqlite') {
    const dir = makeTempDir('outbox-bench-mixed-');
    // The database and its WAL, if one was left; the shared-memory index is rebuilt on open.
    for (const name of fs.readdirSync(kept.dataDir).filter((file) => file === SQLITE_FILE_NAME || file === `${SQLITE_FILE_NAME}-wal`))
      fs.copyFileSync(path.join(kept.dataDir, name), path.join(dir, name), fs.constants.COPYFILE_FICLONE);
    return { dataDir: dir, databaseUrl: undefined, seconds: (performance.now() - started) / 1000, drop: async () => removeDir(dir) };
  }
  const source = new URL(kept.databaseUrl!).pathname.slice(1);
  const name = `outbox_bench_mixed_${crypto.randomBytes(3).toString('hex')}`;
  const admin = async (text: string) => {
    const client = new pg.Client({ connectionString: postgresAdminUrl });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };
  // A template must have no other sessions: prepareDemoStore's just closed, which the server may see a moment late.
  for (let attempt = 1; ; attempt++) {
    try {
      await admin(`create database ${name} template ${source}`);
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || attempt >= 20) {
        throw new Error(
          `could not copy ${source} (is another run, bench/list.ts or bench/console-latency.ts, using it?): ${(error as Error).message}`,
        );
      }
      await sleep(250);
    }
  }
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return {
    dataDir: undefined,
    databaseUrl: url.toString(),
    seconds: (performance.now() - started) / 1000,
    drop: () => admin(`drop database if exists ${name} with (force)`),
  };
}

interface Asked extends RandomQuery {
  ms: number;
  /** performance.now() when the request was sent. */
  startedAt: number;
}

interface EngineResult {
  engine: Engine;
  copySeconds: number;
  fillSeconds: number | null;
  queueSeconds: number;
  queued: number;
  whileDelivering: LatencySummary;
  afterDelivery: LatencySummary | null;
  windowSeconds: number;
  delivered: number;
  mailsPerSecond: number;
  failedInWindow: number;
  ranOut: boolean;
  cpu: { benchPercent: number | undefined; sinkPercent: number | undefined; postgresPercent: number | undefined };
  met: boolean;
  workerLog: string[];
  slowest: Asked[];
}

async function runEngine(engine: Engine, sink: { url: string; pid: number }): Promise<EngineResult> {
  const kept = await prepareDemoStore({ engine, count, tag });
  const copy = await copyStore(engine, kept);
  console.log(`${engine}: copied the kept store of ${formatNumber(count)} mails in ${copy.seconds.toFixed(1)} s`);
  try {
    if (!isCold) await warmDemoStore(engine, copy.dataDir ?? kept.dataDir, copy.databaseUrl);
    const outbox = await startBenchOutbox({
      engine,
      label: 'mixed',
      ...(copy.dataDir ? { dataDir: copy.dataDir } : {}),
      ...(copy.databaseUrl ? { databaseUrl: copy.databaseUrl } : {}),
      env: { WORKER: 'off' },
    });
    try {
      const { store, services } = outbox.running;
      const token = await operatorToken(outbox);

      // The queries' inputs, from the kept store's mails (as bench/list.ts --random sees them), before queueing.
      const newest = await newestReceivedAt(store.db);
      const random = seededRandom(seed);
      const terms = await searchTerms(store.db, random, count);
      console.log(`${engine}: search terms per decade: ${[...terms].map(([d, t]) => `${d} ${t.length}`).join(', ')}`);

      // --deliver mails queued with the worker off, as bench/delivery.ts queues them.
      const principal = (await services.auth.findApiKeyPrincipal(outbox.apiKey))!;
      const queueStarted = performance.now();
      await queueMails(services.submissions, principal, deliver);
      const queueSeconds = (performance.now() - queueStarted) / 1000;
      console.log(`${engine}: queued ${formatNumber(deliver)} mails in ${queueSeconds.toFixed(1)} s`);

      // Warm-up queries (another seed) before the worker starts, as bench/list.ts does before its timed ones.
      const warmAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const warm = seededRandom(seed + 1);
      for (let i = 0; i < 20; i++) await httpGet(warmAgent, listUrl(outbox.baseUrl, newest, randomQuery(warm, terms), LIMIT), token);
      warmAgent.destroy();

      // The worker, as main.ts builds it (bench/support/bench-worker.ts, shared with bench/delivery.ts).
      const {
        worker,
        transport,
        log: workerLog,
      } = createBenchWorker({ store, config, relayUrl: sink.url, onChange: (ids) => services.mails.notify({ type: 'updated', ids }) });

      const handled = (counts: Map<number, number>) =>
        (counts.get(MailStatus.ProviderSent) ?? 0) + (counts.get(MailStatus.ProviderError) ?? 0) + (counts.get(MailStatus.Error) ?? 0);
      const failed = (counts: Map<number, number>) => (counts.get(MailStatus.ProviderError) ?? 0) + (counts.get(MailStatus.Error) ?? 0);
      const sentOf = (counts: Map<number, number>) => counts.get(MailStatus.ProviderSent) ?? 0;
      const before = await getStatusCounts(store.db);

      let agent: http.Agent | undefined;
      let polling = true;
      let poller: Promise<void> | undefined;
      try {
        worker.start();
        const rampDeadline = performance.now() + RAMP_MAX_MS;
        while (
          sentOf(await getStatusCounts(store.db)) - sentOf(before) < Math.min(rampSent, deliver / 10) &&
          performance.now() < rampDeadline
        )
          await sleep(10);

        // The window: from here to the last query's answer, or to the poll that saw every queued mail handled.
        let drained: { at: number; counts: Map<number, number> } | undefined;
        poller = (async () => {
          while (polling) {
            await sleep(POLL_MS);
            const counts = await getStatusCounts(store.db);
            if (drained === undefined && handled(counts) - handled(before) >= deliver) drained = { at: performance.now(), counts };
          }
        })();
        agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        const cpuBench = cpuTimeMs();
        const cpuSink = cpuTimeMs(sink.pid);
        const measureBackends = engine === 'postgres' ? await postgresBackendCpu(store.db) : undefined;
        const startCounts = await getStatusCounts(store.db);
        const windowStart = performance.now();
        const asked: Asked[] = [];
        for (let i = 0; i < queryCount; i++) {
          const query = randomQuery(random, terms);
          const url = listUrl(outbox.baseUrl, newest, query, LIMIT);
          const startedAt = performance.now();
          const answer = await httpGet(agent, url, token);
          const ms = performance.now() - startedAt;
          if (answer.status !== 200) throw new Error(`${url}: ${answer.status} ${answer.body.slice(0, 300)}`);
          asked.push({ ...query, ms, startedAt });
        }
        const lastAnswer = performance.now();
        const drainedInTime = drained as { at: number; counts: Map<number, number> } | undefined;
        const windowEnd = drainedInTime ? Math.min(drainedInTime.at, lastAnswer) : lastAnswer;
        const endCounts = drainedInTime ? drainedInTime.counts : await getStatusCounts(store.db);
        const windowMs = windowEnd - windowStart;
        const backendMs = await measureBackends?.();
        const cpu = {
          benchPercent: cpuPercent(cpuBench, cpuTimeMs(), lastAnswer - windowStart),
          sinkPercent: cpuPercent(cpuSink, cpuTimeMs(sink.pid), lastAnswer - windowStart),
          postgresPercent: backendMs === undefined ? undefined : Math.round((backendMs / (lastAnswer - windowStart)) * 100),
        };

        const during = asked.filter((a) => !drainedInTime || a.startedAt < drainedInTime.at);
        const after = asked.filter((a) => drainedInTime && a.startedAt >= drainedInTime.at);
        const delivered = sentOf(endCounts) - sentOf(startCounts);
        const mailsPerSecond = windowMs > 0 ? Math.round((delivered / windowMs) * 1000) : 0;
        const whileDelivering = summarize(during.map((a) => a.ms));
        const ranOut = drainedInTime !== undefined && drainedInTime.at < lastAnswer;
        if (ranOut)
          console.log(
            `⚠ ${engine}: the ${formatNumber(deliver)} queued mails were all handled after ${during.length} of ${queryCount} queries ` +
              `(${(windowMs / 1000).toFixed(1)} s): only those count as under load; queue more with --deliver.`,
          );
        return {
          engine,
          copySeconds: copy.seconds,
          fillSeconds: kept.filledSeconds ?? null,
          queueSeconds,
          queued: deliver,
          whileDelivering,
          afterDelivery: after.length > 0 ? summarize(after.map((a) => a.ms)) : null,
          windowSeconds: Math.round(windowMs) / 1000,
          delivered,
          mailsPerSecond,
          failedInWindow: failed(endCounts) - failed(startCounts),
          ranOut,
          cpu,
          met: during.length > 0 && whileDelivering.p99 <= GOAL_P99_MS && mailsPerSecond >= GOAL_MAILS_PER_SECOND,
          workerLog: [...workerLog.lines],
          slowest: [...during].sort((x, y) => y.ms - x.ms).slice(0, 5),
        };
      } finally {
        polling = false;
        await poller;
        agent?.destroy();
        await worker.stop({ graceMs: 1000 });
        transport.close();
      }
    } finally {
      await outbox.close();
    }
  } finally {
    await copy.drop();
    await kept.cleanup();
  }
}

async function main(): Promise<void> {
  const engines = await resolveEngines(engineChoice, { withoutPostgres: 'skip' });
  const setup = printSetup(
    `List under delivery load: GET /api/v1/mail/list?limit=50 (bench/list.ts --random) while the worker drains a queue`,
    {
      engine: engines.join('+'),
      count,
      deliver,
      queries: queryCount,
      seed,
      limit: LIMIT,
      workerConcurrency: concurrency,
      poolConnections: maxConnections,
      sink: 'capture relay (store:false) in a child process',
      server: 'start(config) in this process, worker built as bench/delivery.ts, on a copy of the kept store',
      client: 'node:http keep-alive, sequential',
      store: isCold ? 'as the kernel left it (--cold)' : 'read into the page cache first',
    },
  );

  const sink = await startSinkProcess();
  const results: EngineResult[] = [];
  try {
    for (const engine of engines) results.push(await runEngine(engine, sink));
  } finally {
    await sink.stop();
  }

  console.log('');
  const pct = (value: number | undefined) => (value === undefined ? '-' : `${value}%`);
  printTable(
    [
      'engine',
      'phase',
      'queries',
      'p50 ms',
      'p99 ms',
      'max ms',
      'seconds',
      'sent in window',
      'mails/s',
      'CPU bench / sink / PG',
      `goal p99 ≤ ${GOAL_P99_MS} ms at ≥ ${formatNumber(GOAL_MAILS_PER_SECOND)}/s`,
    ],
    results.flatMap((r) => [
      [
        r.engine,
        'while delivering',
        r.whileDelivering.count,
        r.whileDelivering.p50,
        r.whileDelivering.p99,
        r.whileDelivering.max,
        r.windowSeconds.toFixed(1),
        r.delivered,
        formatNumber(r.mailsPerSecond),
        `${pct(r.cpu.benchPercent)} / ${pct(r.cpu.sinkPercent)} / ${pct(r.cpu.postgresPercent)}`,
        `${verdict(r.met)}${r.ranOut ? ' (queue ran out)' : ''}`,
      ],
      ...(r.afterDelivery
        ? [
            [
              r.engine,
              'after the queue ran out',
              r.afterDelivery.count,
              r.afterDelivery.p50,
              r.afterDelivery.p99,
              r.afterDelivery.max,
              '',
              '',
              '',
              '',
              '',
            ],
          ]
        : []),
    ]),
  );
  for (const r of results) {
    console.log(
      `  ${r.engine}: ${formatNumber(r.queued)} queued in ${r.queueSeconds.toFixed(1)} s; store copied in ${r.copySeconds.toFixed(1)} s` +
        `${r.fillSeconds !== null ? `, filled in ${r.fillSeconds.toFixed(1)} s before the run` : ''}` +
        `${r.failedInWindow > 0 ? `; ${r.failedInWindow} mails failed in the window (ProviderError/Error)` : ''}`,
    );
    if (r.ranOut)
      console.log(
        `  ${r.engine}: the queue ran out before the queries ended: the figures are for the first ${r.whileDelivering.count} queries only`,
      );
    if (r.workerLog.length > 0) console.log(`  ${r.engine}: worker log: ${r.workerLog.join(' | ')}`);
    console.log(`  ${r.engine} slowest while delivering:`);
    for (const a of r.slowest) console.log(`    ${describeQuery(a)}`);
  }
  console.log(
    `  load average after the run: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')} (before: ${setup.loadAverage.join(' / ')})`,
  );
  const file = writeResult('mixed', setup, {
    goal: { p99Ms: GOAL_P99_MS, mailsPerSecond: GOAL_MAILS_PER_SECOND },
    engines: results,
  });
  console.log(`\nresult: ${file}`);
}

runMain(main);
