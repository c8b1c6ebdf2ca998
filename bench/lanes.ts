/**
 * Lanes under a bulk flood (docs/lanes.md): while a bulk application's queue of N mails drains,
 * how long single transactional mails of another application take from submission to the relay, and how much of
 * the throughput bulk keeps. Goal: transactional p99 ≤ 1 s while bulk keeps ≥ 10 % of the mails delivered.
 *
 *   npx tsx bench/lanes.ts [--engine sqlite|postgres|all] [--bulk 100000] [--seconds 30] [--interval 100] [--per-tick 1]
 *                          [--concurrency N]
 *
 * - The server is `start(config)` in this process with WORKER=off (bench/support/outbox.ts), on a fresh SQLite
 *   folder or a scratch PostgreSQL database. Two API keys are made as `apikey create NAME --lane LANE` makes them:
 *   `news` in the bulk lane and `shop` in the transactional one.
 * - `--bulk` mails of `news` (bench/support/mails.ts `benchMail`, envelope sender news@news.example) are queued
 *   through the submission service in batches of 500, as bench/delivery.ts queues its mails (the real writer); the
 *   queue is then checked to hold them in lane bulk under news's key. The fill rate is printed: on a slow machine
 *   lower `--bulk`.
 * - The sink is a discarding SMTP server in its own process that notes when each MAIL FROM arrives, by envelope
 *   sender (bench/support/arrival-sink.ts). The worker is built as bench/delivery.ts builds it (as main.ts does,
 *   bench/support/bench-worker.ts), in this process, and woken on new mail as main.ts wakes it.
 * - Once the worker has sent its first mails (at most 2 s after its start), the window opens: every `--interval`
 *   ms `shop` submits `--per-tick` mails (1 by default: single mails; more in one batch call) through the
 *   submission service, each from its own envelope sender shop-<n>@shop.example, its submit time noted just before
 *   the call. The window closes after `--seconds` or when every bulk mail is handled (the status counters' poll),
 *   whichever comes first; the submitter stops there. Then the run waits (up to 15 s) for the transactional mails
 *   still in the queue, with bulk still draining, and reads the sink's arrivals.
 * - Figures: transactional latency submit → MAIL FROM at the relay (p50/p95/p99/max, count, and those that never
 *   arrived); the submission call's own duration; bulk and transactional mails arriving at the relay per second
 *   in the window and bulk's share of them; CPU µs per mail delivered in the window of this process (server,
 *   worker and submitter share it; process.cpuUsage) and, on PostgreSQL, of the database's backends (/proc).
 *   At one mail per 100 ms transactional asks for a small part of the worker, so bulk's share is most of the
 *   throughput; `--per-tick` raises transactional's load towards the worker's rate, where both lanes compete for
 *   every claim and bulk's floor (a fifth of the slots) shows. Past the rate intake and delivery share the process
 *   and the store, and the figures measure the overload (the submit call's duration shows it).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { LANE_CODES, MailStatus } from '@outbox/contract';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import { startArrivalSink } from './support/arrival-sink.js';
import { preciseNow } from './support/discarding-sink.js';
import { benchWorkerConfig, createBenchWorker, relayPoolSize } from './support/bench-worker.js';
import {
  cpuTimeMs,
  formatNumber,
  type LatencySummary,
  printSetup,
  printTable,
  rate,
  runMain,
  sleep,
  summarize,
  verdict,
  writeResult,
} from './support/common.js';
import { benchMail, QUEUE_BATCH, queueMails } from './support/mails.js';
import { startBenchOutbox, type Engine } from './support/outbox.js';
import {
  enginesOption,
  parseBenchArgs,
  positiveNumberOption,
  resolveEngines,
  wholeNumberOption,
  workerConcurrencyOption,
} from './support/options.js';
import { postgresBackendCpu } from './support/postgres.js';

const GOAL_P99_MS = 1_000;
const GOAL_BULK_SHARE = 0.1;
const POLL_MS = 50;
/** The window opens once the worker has sent its first mails (its pool connected), or after RAMP_MAX_MS. */
const RAMP_MAX_MS = 2_000;
/** How long the transactional mails submitted in the window may take to leave the queue after it closes. */
const TAIL_MAX_MS = 15_000;
const BULK_SENDER = 'news@news.example';
const shopSender = (n: number) => `shop-${n}@shop.example`;

const {
  engine: engineChoice,
  bulk: bulkCount,
  seconds,
  interval: intervalMs,
  'per-tick': perTick,
  concurrency: concurrencyText,
} = parseBenchArgs({
  engine: enginesOption('all', ['sqlite', 'postgres', 'all']),
  bulk: wholeNumberOption(100_000),
  seconds: positiveNumberOption(30),
  interval: positiveNumberOption(100),
  'per-tick': wholeNumberOption(1),
  concurrency: workerConcurrencyOption(),
});
const config = benchWorkerConfig(concurrencyText);
// As bench/delivery.ts and main.ts size the relay pool.
const concurrency = config.workerConcurrency;
const maxConnections = relayPoolSize(concurrency);

interface EngineResult {
  engine: Engine;
  bulkQueued: number;
  fillSeconds: number;
  fillMailsPerSecond: number;
  windowSeconds: number;
  /** The window closed because every bulk mail was handled, before --seconds. */
  drained: boolean;
  transactional: LatencySummary;
  submitCall: LatencySummary;
  submitted: number;
  submitErrors: number;
  notArrived: number;
  bulkInWindow: number;
  transactionalInWindow: number;
  bulkPerSecond: number;
  transactionalPerSecond: number;
  bulkShare: number;
  cpu: { benchUsPerMail: number | undefined; postgresUsPerMail: number | undefined; benchPercent: number | undefined };
  failed: number;
  workerLog: string[];
}

async function runEngine(engine: Engine): Promise<EngineResult> {
  const sink = await startArrivalSink();
  const outbox = await startBenchOutbox({ engine, label: 'lanes', env: { WORKER: 'off' } });
  try {
    const { store, services } = outbox.running;
    // As `apikey create news --lane bulk` and `apikey create shop --lane transactional`.
    const newsKey = await services.auth.createApiKey('news', 'bench', { lane: 'bulk' });
    const shopKey = await services.auth.createApiKey('shop', 'bench', { lane: 'transactional' });
    const news = (await services.auth.findApiKeyPrincipal(newsKey))!;
    const shop = (await services.auth.findApiKeyPrincipal(shopKey))!;

    // The flood, queued with the worker off, as bench/delivery.ts queues its mails.
    const fillStarted = performance.now();
    let lastReport = fillStarted;
    await queueMails(services.submissions, news, bulkCount, {
      mailAt: (i) => benchMail(i, { fromName: 'Acme News', fromMail: BULK_SENDER, subject: `Newsletter ${i}` }),
      onBatch: (done) => {
        if (performance.now() - lastReport <= 10_000) return;
        lastReport = performance.now();
        console.log(
          `${engine}: queued ${formatNumber(done)} of ${formatNumber(bulkCount)} (${formatNumber(rate(done, lastReport - fillStarted))}/s)`,
        );
      },
    });
    const fillMs = performance.now() - fillStarted;
    const { rows: queued } = await sql<{ lane: number; api_key_id: number; n: number | string }>`
      select lane, api_key_id, count(*) as n from mail_queue group by lane, api_key_id`.execute(store.db);
    const inBulk = queued.find((row) => row.lane === LANE_CODES.bulk && row.api_key_id === news.id);
    if (queued.length !== 1 || Number(inBulk?.n) !== bulkCount)
      throw new Error(`the queue should hold ${bulkCount} bulk mails of news (key ${news.id}) and nothing else: ${JSON.stringify(queued)}`);
    console.log(
      `${engine}: queued ${formatNumber(bulkCount)} bulk mails of news in ${(fillMs / 1000).toFixed(1)} s ` +
        `(${formatNumber(rate(bulkCount, fillMs))} mails/s through submitJson, batches of ${QUEUE_BATCH})`,
    );

    const {
      worker,
      transport,
      log: workerLog,
    } = createBenchWorker({ store, config, relayUrl: sink.url, onChange: (ids) => services.mails.notify({ type: 'updated', ids }) });
    // As main.ts: a new mail starts delivery now, not at the worker's next poll.
    const stopWaking = services.mails.onChange((change) => {
      if (change.type === 'created' || change.type === 'queued' || change.type === 'resync') worker.wake();
    });

    const sentOf = (counts: Map<number, number>) => counts.get(MailStatus.ProviderSent) ?? 0;
    const failedOf = (counts: Map<number, number>) => (counts.get(MailStatus.ProviderError) ?? 0) + (counts.get(MailStatus.Error) ?? 0);
    const handledOf = (counts: Map<number, number>) => sentOf(counts) + failedOf(counts);
    const before = await getStatusCounts(store.db);

    const submittedAt = new Map<string, number>();
    const submitCallMs: number[] = [];
    let submitErrors = 0;
    let submitting = true;
    let polling = true;
    let poller: Promise<void> | undefined;
    let submitter: Promise<void> | undefined;
    try {
      worker.start();
      const rampDeadline = performance.now() + RAMP_MAX_MS;
      while (sentOf(await getStatusCounts(store.db)) - sentOf(before) < 1 && performance.now() < rampDeadline) await sleep(10);

      // The window: from here to --seconds, or to the poll that saw every bulk mail (and each transactional one
      // submitted so far) handled.
      let drainedAt: number | undefined;
      const windowStart = preciseNow();
      const windowDeadline = windowStart + seconds * 1000;
      const cpuBefore = cpuTimeMs();
      const measureBackends = engine === 'postgres' ? await postgresBackendCpu(store.db) : undefined;

      let sequence = 0;
      submitter = (async () => {
        const inFlight = new Set<Promise<void>>();
        let next = performance.now();
        while (submitting) {
          const first = sequence;
          sequence += perTick;
          const mails = Array.from({ length: perTick }, (_, i) =>
            benchMail(1_000_000_000 + first + i, { fromMail: shopSender(first + i), subject: `Your password reset code ${first + i}` }),
          );
          const at = preciseNow();
          const call = services.submissions.submitJson(shop, mails, perTick > 1).then(
            () => {
              submitCallMs.push(preciseNow() - at);
              for (let i = 0; i < perTick; i++) submittedAt.set(shopSender(first + i), at);
            },
            () => {
              submitErrors += perTick;
            },
          );
          inFlight.add(call);
          void call.finally(() => inFlight.delete(call));
          next += intervalMs;
          await sleep(Math.max(0, next - performance.now()));
        }
        await Promise.all(inFlight);
      })();

      poller = (async () => {
        while (polling) {
          await sleep(POLL_MS);
          const counts = await getStatusCounts(store.db);
          if (drainedAt === undefined && handledOf(counts) - handledOf(before) >= bulkCount + submittedAt.size) drainedAt = preciseNow();
        }
      })();
      while (drainedAt === undefined && preciseNow() < windowDeadline) await sleep(POLL_MS);
      const windowEnd = Math.min(drainedAt ?? windowDeadline, preciseNow());
      submitting = false;
      const cpuAfter = cpuTimeMs();
      const backendMs = await measureBackends?.();
      await submitter;

      // The transactional tail: what was submitted in the window leaves the queue, bulk still draining behind it.
      const tailDeadline = performance.now() + TAIL_MAX_MS;
      for (;;) {
        const { rows } = await sql<{ n: number | string }>`
          select count(*) as n from mail_queue where lane = ${LANE_CODES.transactional}`.execute(store.db);
        if (Number(rows[0]?.n ?? 0) === 0 || performance.now() > tailDeadline) break;
        await sleep(POLL_MS);
      }
      await sleep(100); // the last MAIL FROM's note reaching the sink's list
      polling = false;
      await poller;
      const arrivals = await sink.arrivals();
      const afterCounts = await getStatusCounts(store.db);

      // Each transactional sender's first arrival; every arrival in the window, by lane.
      const firstArrival = new Map<string, number>();
      let bulkInWindow = 0;
      let transactionalInWindow = 0;
      for (const [sender, at] of arrivals) {
        const isBulk = sender === BULK_SENDER;
        if (!isBulk && !firstArrival.has(sender)) firstArrival.set(sender, at);
        if (at >= windowStart && at <= windowEnd) {
          if (isBulk) bulkInWindow++;
          else transactionalInWindow++;
        }
      }
      const latencies: number[] = [];
      let notArrived = 0;
      for (const [sender, at] of submittedAt) {
        const arrived = firstArrival.get(sender);
        if (arrived === undefined) notArrived++;
        else latencies.push(arrived - at);
      }
      const windowMs = windowEnd - windowStart;
      const deliveredInWindow = bulkInWindow + transactionalInWindow;
      const usPerMail = (ms: number | undefined) =>
        ms === undefined || deliveredInWindow === 0 ? undefined : Math.round((ms * 1000) / deliveredInWindow);
      return {
        engine,
        bulkQueued: bulkCount,
        fillSeconds: Math.round(fillMs) / 1000,
        fillMailsPerSecond: rate(bulkCount, fillMs),
        windowSeconds: Math.round(windowMs) / 1000,
        drained: drainedAt !== undefined && drainedAt <= windowDeadline,
        transactional: summarize(latencies),
        submitCall: summarize(submitCallMs),
        submitted: submittedAt.size,
        submitErrors,
        notArrived,
        bulkInWindow,
        transactionalInWindow,
        bulkPerSecond: rate(bulkInWindow, windowMs),
        transactionalPerSecond: rate(transactionalInWindow, windowMs),
        bulkShare: deliveredInWindow === 0 ? 0 : bulkInWindow / deliveredInWindow,
        cpu: {
          benchUsPerMail: usPerMail(cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore),
          postgresUsPerMail: usPerMail(backendMs),
          benchPercent:
            cpuBefore === undefined || cpuAfter === undefined || windowMs <= 0
              ? undefined
              : Math.round(((cpuAfter - cpuBefore) / windowMs) * 100),
        },
        failed: failedOf(afterCounts) - failedOf(before),
        workerLog: [...workerLog.lines],
      };
    } finally {
      submitting = false;
      polling = false;
      await submitter?.catch(() => undefined);
      await poller?.catch(() => undefined);
      stopWaking();
      await worker.stop({ graceMs: 1000 });
      transport.close();
    }
  } finally {
    await outbox.close();
    await sink.stop();
  }
}

async function main(): Promise<void> {
  const engines = await resolveEngines(engineChoice, { withoutPostgres: 'skip' });
  const setup = printSetup('Lanes: single transactional mails of one application while another application’s bulk queue drains', {
    engine: engines.join('+'),
    bulk: bulkCount,
    seconds,
    intervalMs,
    perTick,
    workerConcurrency: concurrency,
    poolConnections: maxConnections,
    sink: 'arrival sink (smtp-server, discarding, notes MAIL FROM) in a child process',
    server: 'start(config) in this process, worker built as bench/delivery.ts and woken on new mail as main.ts',
    intake: 'submission service submitJson (news: batches of 500 before the worker starts; shop: during the window)',
  });

  const results: EngineResult[] = [];
  for (const engine of engines) results.push(await runEngine(engine));

  console.log('');
  const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(0) : '-');
  printTable(
    [
      'engine',
      'window s',
      'transactional n',
      'p50 ms',
      'p95 ms',
      'p99 ms',
      'max ms',
      'not arrived',
      'bulk/s',
      'transactional/s',
      'bulk share',
      'µs CPU/mail bench / PG',
      `goal p99 ≤ ${GOAL_P99_MS} ms, bulk ≥ ${GOAL_BULK_SHARE * 100} %`,
    ],
    results.map((r) => [
      r.engine,
      `${r.windowSeconds.toFixed(1)}${r.drained ? ' (drained)' : ''}`,
      r.transactional.count,
      ms(r.transactional.p50),
      ms(r.transactional.p95),
      ms(r.transactional.p99),
      ms(r.transactional.max),
      r.notArrived,
      formatNumber(r.bulkPerSecond),
      formatNumber(r.transactionalPerSecond),
      `${(r.bulkShare * 100).toFixed(1)} %`,
      `${r.cpu.benchUsPerMail ?? '-'} / ${r.cpu.postgresUsPerMail ?? '-'}`,
      verdict(r.transactional.count > 0 && r.notArrived === 0 && r.transactional.p99 <= GOAL_P99_MS && r.bulkShare >= GOAL_BULK_SHARE),
    ]),
  );
  for (const r of results) {
    console.log(
      `  ${r.engine}: fill ${formatNumber(r.bulkQueued)} bulk mails in ${r.fillSeconds.toFixed(1)} s (${formatNumber(r.fillMailsPerSecond)}/s); ` +
        `in the window ${formatNumber(r.bulkInWindow)} bulk + ${formatNumber(r.transactionalInWindow)} transactional reached the relay; ` +
        `shop submitted ${formatNumber(r.submitted)} in the window, its submitJson call p50/p99/max ${ms(r.submitCall.p50)}/${ms(r.submitCall.p99)}/${ms(r.submitCall.max)} ms; ` +
        `this process at ${r.cpu.benchPercent ?? '?'}% of a core`,
    );
    if (r.drained)
      console.log(`  ${r.engine}: the bulk queue drained after ${r.windowSeconds.toFixed(1)} s, before --seconds ${seconds}: raise --bulk`);
    if (r.notArrived > 0)
      console.log(
        `  ⚠ ${r.engine}: ${r.notArrived} transactional mails had not reached the relay ${TAIL_MAX_MS / 1000} s after the window`,
      );
    if (r.submitErrors > 0) console.log(`  ⚠ ${r.engine}: ${r.submitErrors} transactional submissions failed`);
    if (r.failed > 0) console.log(`  ⚠ ${r.engine}: ${r.failed} mails failed delivery (ProviderError/Error); the sink accepts everything`);
    if (r.workerLog.length > 0) console.log(`  ${r.engine}: worker log: ${r.workerLog.join(' | ')}`);
  }
  console.log(
    `  load average after the run: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')} (before: ${setup.loadAverage.join(' / ')})`,
  );
  const file = writeResult('lanes', setup, { goal: { p99Ms: GOAL_P99_MS, bulkShare: GOAL_BULK_SHARE }, engines: results });
  console.log(`\nresult: ${file}`);
  // A broken run: nothing was measured.
  if (results.some((r) => r.transactional.count === 0 || r.bulkInWindow + r.transactionalInWindow === 0)) process.exitCode = 1;
}

runMain(main);
