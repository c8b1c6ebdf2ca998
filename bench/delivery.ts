/**
 * Delivery rate: how fast the worker takes Queued mails to ProviderSent against a fast
 * loopback sink, compared in the same run with a raw pooled nodemailer loop sending the same number of
 * prebuilt messages to the same sink with the same pool size and concurrency. Goal: worker / raw >= 0.8.
 *
 *   npx tsx bench/delivery.ts [--count 5000] [--rounds 1] [--engine auto|sqlite|postgres|all] [--sink process|inline] [--profile]
 *                             [--recipients 1] [--verp] [--concurrency N] [--hot-record]
 *
 * The sink is the embedded capture relay with `store: false`, in its own process by default (a provider is
 * another machine; `--sink inline` runs it in this process). The worker is built as server/src/main.ts
 * builds it, from a config made by loadConfig (WORKER_CONCURRENCY 50 → 10 pooled connections by default;
 * `--concurrency N` sets it).
 * The mails are queued first through the submission service with WORKER off, then the clock starts when
 * the worker starts and stops when the ProviderSent counter reaches N.
 *
 * Both paths are bound by round trips between two processes on loopback rather than by CPU, so a single
 * run varies by ±20% here; `--rounds 3` repeats raw + worker three times and judges the median ratio.
 * `--engine auto` (default) adds PostgreSQL when one answers at OUTBOX_BENCH_POSTGRES_URL; `all` stops when none does.
 *
 * CPU per mail is given for this process and, on PostgreSQL, for the database's server processes (the run's
 * backends, read from /proc: the server must run on this machine). `--profile` writes a CPU profile of each
 * worker drain (bench/results/profiles/) and prints its summary.
 *
 * `--recipients N` sends each of the worker's mails to N recipients (the raw loop stays at one); `--verp` runs the
 * worker as BOUNCE_DOMAIN does, one envelope per recipient, each from its own return path (docs/bounces.md): the
 * two together measure what one envelope per recipient costs.
 *
 * `--hot-record` (PostgreSQL, an experiment, not the product): before the mails are queued, drops every index of
 * `mails` that holds a column an outcome's UPDATE writes and sets the table's fillfactor to 50, so that the outcome's
 * write of the record is a HOT update. It measures the most that taking the status and the dates the list sorts on
 * out of the record could give a delivery (that design would write them to a table of their own instead).
 */
import { MailStatus } from '@outbox/contract';
import { startCaptureRelay } from '../server/src/delivery/capture-relay.js';
import { createRelayTransport, type RelayTransport } from '../server/src/delivery/relay-transport.js';
import { createReturnPathCodec } from '../server/src/bounces/return-path.js';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../server/src/store/schema.js';
import {
  cpuPercent,
  cpuTimeMs,
  formatNumber,
  makeTempDir,
  printSetup,
  printTable,
  rate,
  removeDir,
  resultsDir,
  runMain,
  sleep,
  verdict,
  writeResult,
} from './support/common.js';
import { startCpuProfile } from './support/cpu-profile.js';
import { benchMail, benchRawMessage, queueMails } from './support/mails.js';
import { startBenchOutbox, type Engine } from './support/outbox.js';
import {
  choiceOption,
  enginesOption,
  flagOption,
  parseBenchArgs,
  resolveEngines,
  wholeNumberOption,
  workerConcurrencyOption,
} from './support/options.js';
import { postgresBackendCpu } from './support/postgres.js';
import { startSinkProcess } from './support/sink-process.js';
import { benchWorkerConfig, createBenchWorker, relayPoolSize } from './support/bench-worker.js';

const GOAL_RATIO = 0.8;
const DRAIN_TIMEOUT_MS = 60_000;

const {
  count,
  engine: engineChoice,
  sink: sinkPlace,
  concurrency: concurrencyText,
  rounds: roundCount,
  profile: isProfiling,
  recipients: recipientsPerMail,
  verp: isVerp,
  'hot-record': isHotRecord,
} = parseBenchArgs({
  count: wholeNumberOption(5000),
  engine: enginesOption('auto', ['auto', 'sqlite', 'postgres', 'all']),
  sink: choiceOption('process', ['process', 'inline']),
  concurrency: workerConcurrencyOption(),
  rounds: wholeNumberOption(1),
  profile: flagOption(),
  recipients: wholeNumberOption(1),
  verp: flagOption(),
  'hot-record': flagOption(),
});
const verp = isVerp ? createReturnPathCodec('bench-return-path-secret', 'bounces.bench.test') : undefined;
const config = benchWorkerConfig(concurrencyText);
// Exactly as main.ts sizes the relay pool.
const concurrency = config.workerConcurrency;
const maxConnections = relayPoolSize(concurrency);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** N sends through `transport`, `concurrency` at a time: the ceiling the worker is compared with. */
interface Cpu {
  /** Percent of one core used by this process and by the sink process while the phase ran. */
  main: number | undefined;
  sink: number | undefined;
  /** CPU time of this process, in ms. */
  mainMs: number | undefined;
  /** CPU time of the PostgreSQL backends serving the run, in ms. */
  backendMs?: number | undefined;
}

function cpuMeter(sinkPid: number | undefined) {
  const main = cpuTimeMs();
  const sink = sinkPid === undefined ? undefined : cpuTimeMs(sinkPid);
  return (wallMs: number): Cpu => {
    const mainAfter = cpuTimeMs();
    return {
      main: cpuPercent(main, mainAfter, wallMs),
      sink: sinkPid === undefined ? undefined : cpuPercent(sink, cpuTimeMs(sinkPid), wallMs),
      mainMs: main === undefined || mainAfter === undefined ? undefined : mainAfter - main,
    };
  };
}

async function rawLoop(
  transport: RelayTransport,
  n: number,
  sinkPid?: number,
): Promise<{ ms: number; sent: number; failed: number; cpu: Cpu }> {
  // Buffers, as the worker gets them from the store (nodemailer is slower with strings).
  const messages = Array.from({ length: n }, (_, i) => {
    const message = benchRawMessage(i);
    return { envelope: message.envelope, raw: Buffer.from(message.raw) };
  });
  let next = 0;
  let sent = 0;
  let failed = 0;
  const measureCpu = cpuMeter(sinkPid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < messages.length) {
        const outcome = await transport.send(messages[next++]!);
        if (outcome.kind === 'sent') sent += 1;
        else failed += 1;
      }
    }),
  );
  const ms = performance.now() - started;
  return { ms, sent, failed, cpu: measureCpu(ms) };
}

interface WorkerRun {
  engine: Engine;
  queueMs: number;
  drainMs: number;
  sent: number;
  other: Record<string, number>;
  cpu: Cpu;
  /** PostgreSQL: row versions written per delivered mail, by table (one write of `mails` per outcome). */
  writes?: Record<string, { insertsPerMail: number; updatesPerMail: number; hotShare: number | null }> | undefined;
}

/**
 * PostgreSQL's row-version counters per table (`pg_stat_user_tables`): inserts, updates and HOT updates. A backend
 * reports its counts at most once a second, so every pooled connection is first told to flush at its next
 * transaction's end (each held by a sleep, so that the pool hands out each connection once).
 */
async function rowVersions(db: Kysely<Database>): Promise<Map<string, { ins: number; upd: number; hot: number }>> {
  await Promise.all(Array.from({ length: 12 }, () => sql`select pg_stat_force_next_flush(), pg_sleep(0.1)`.execute(db)));
  const { rows } = await sql<{ relname: string; ins: string; upd: string; hot: string }>`
    select relname, n_tup_ins as ins, n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables`.execute(db);
  return new Map(rows.map((r) => [r.relname, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot) }]));
}

/** Row versions written per delivered mail, by table, with the HOT share of the updates. */
function writesPerMail(
  before: Map<string, { ins: number; upd: number; hot: number }>,
  after: Map<string, { ins: number; upd: number; hot: number }>,
  mails: number,
): Record<string, { insertsPerMail: number; updatesPerMail: number; hotShare: number | null }> {
  const out: Record<string, { insertsPerMail: number; updatesPerMail: number; hotShare: number | null }> = {};
  for (const [table, a] of after) {
    const b = before.get(table) ?? { ins: 0, upd: 0, hot: 0 };
    const upd = a.upd - b.upd;
    const ins = a.ins - b.ins;
    if (upd === 0 && ins === 0) continue;
    out[table] = { insertsPerMail: ins / mails, updatesPerMail: upd / mails, hotShare: upd === 0 ? null : (a.hot - b.hot) / upd };
  }
  return out;
}

/** The columns an outcome's UPDATE of `mails` writes (mail/write/record-moves.ts `updateFrom`). */
const OUTCOME_COLUMNS =
  /\b(status|last_update_at|provider_sent_at|provider_reply|attempts|event_seq|next_attempt_at|rejected_recipients)\b/;

/** `--hot-record`: the record without the indexes an outcome's write touches, and room in each page for new versions. */
async function makeRecordHot(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ name: string; definition: string }>`
    select indexname as name, indexdef as definition from pg_indexes where tablename = 'mails'`.execute(db);
  const dropped = rows.filter((row) => !row.name.endsWith('_pkey') && OUTCOME_COLUMNS.test(row.definition)).map((row) => row.name);
  for (const name of dropped) await sql`drop index ${sql.ref(name)}`.execute(db);
  await sql`alter table mails set (fillfactor = 50)`.execute(db);
  return dropped;
}

async function workerRun(engine: Engine, relayUrl: string, n: number, sinkPid: number | undefined): Promise<WorkerRun> {
  const outbox = await startBenchOutbox({ engine, label: 'delivery', env: { WORKER: 'off' } });
  try {
    const { store, services } = outbox.running;
    if (isHotRecord && engine === 'postgres') {
      const dropped = await makeRecordHot(store.db);
      console.log(`  (--hot-record: dropped ${dropped.length} indexes of mails (${dropped.join(', ')}); fillfactor 50)`);
    }
    const principal = (await services.auth.findApiKeyPrincipal(outbox.apiKey))!;
    const queueStarted = performance.now();
    await queueMails(services.submissions, principal, n, {
      mailAt: (i) => {
        const mail = benchMail(i);
        const extra = Array.from({ length: recipientsPerMail - 1 }, (_, r) => ({ recipientMail: `cc${r}-${i}@example.com` }));
        return { ...mail, to: [...mail.to, ...extra] };
      },
    });
    const queueMs = performance.now() - queueStarted;

    // As main.ts builds it (its logger keeps the first warnings and errors, to explain a failed run).
    const {
      worker,
      transport,
      log: workerLog,
    } = createBenchWorker({
      store,
      config,
      relayUrl,
      onChange: (ids) => services.mails.notify({ type: 'updated', ids }),
      returnPath: verp ? (mailId, recipient) => verp.addressOf(mailId, recipient) : undefined,
    });
    const measureCpu = cpuMeter(sinkPid);
    const measureBackends = engine === 'postgres' ? await postgresBackendCpu(store.db) : undefined;
    const versionsBefore = engine === 'postgres' ? await rowVersions(store.db) : undefined;
    const stopProfile = isProfiling ? await startCpuProfile() : undefined;
    const started = performance.now();
    worker.start();
    let counts = await getStatusCounts(store.db);
    const deadline = started + DRAIN_TIMEOUT_MS;
    while ((counts.get(MailStatus.ProviderSent) ?? 0) < n) {
      await sleep(25);
      counts = await getStatusCounts(store.db);
      const failed = (counts.get(MailStatus.ProviderError) ?? 0) + (counts.get(MailStatus.Error) ?? 0);
      if (failed > 0 || performance.now() > deadline) {
        const state = `status counts ${JSON.stringify(Object.fromEntries(counts))}, worker in flight ${worker.inFlight}, worker log: ${workerLog.lines.join(' | ') || 'nothing'}`;
        await worker.stop({ graceMs: 1000 });
        transport.close();
        throw new Error(
          failed > 0
            ? `${failed} mails failed delivery on ${engine}; the sink accepts everything. ${state}`
            : `draining ${n} mails on ${engine} did not finish within ${DRAIN_TIMEOUT_MS / 1000} s: ${state}`,
        );
      }
    }
    const drainMs = performance.now() - started;
    const cpu: Cpu = { ...measureCpu(drainMs), backendMs: await measureBackends?.() };
    const writes = versionsBefore ? writesPerMail(versionsBefore, await rowVersions(store.db), n) : undefined;
    if (stopProfile) {
      const profile = await stopProfile();
      const file = profile.file(`delivery-${engine}-${new Date().toISOString().replace(/[:.]/g, '-')}`, path.join(resultsDir, 'profiles'));
      console.log(`CPU profile of the worker's drain on ${engine}: ${file}\n${profile.summary}\n`);
    }
    await worker.stop();
    transport.close();
    const other = Object.fromEntries(
      [...counts].filter(([status, c]) => status !== MailStatus.ProviderSent && c > 0).map(([s, c]) => [String(s), c]),
    );
    return { engine, queueMs, drainMs, sent: counts.get(MailStatus.ProviderSent) ?? 0, other, cpu, writes };
  } finally {
    await outbox.close();
  }
}

async function main(): Promise<void> {
  const engines = await resolveEngines(engineChoice, { withoutPostgres: 'fail' });
  const sinkDir = sinkPlace === 'inline' ? makeTempDir('outbox-bench-sink-') : undefined;
  const inlineSink = sinkDir ? await startCaptureRelay({ dataDir: sinkDir, store: false }) : undefined;
  const processSink = inlineSink ? undefined : await startSinkProcess();
  const sinkUrl = inlineSink?.url ?? processSink!.url;

  const setup = printSetup('Delivery rate: Queued → ProviderSent by the worker vs a raw pooled nodemailer loop, same sink', {
    engine: engines.join('+'),
    count,
    rounds: roundCount,
    workerConcurrency: concurrency,
    poolConnections: maxConnections,
    sink: sinkPlace === 'inline' ? 'capture relay (store:false) in this process' : 'capture relay (store:false) in a child process',
    ...(isHotRecord ? { experiment: 'hot-record' } : {}),
  });
  console.log(`worker's mails: ${recipientsPerMail} recipient(s) each; envelopes: ${verp ? 'one per recipient (--verp)' : 'one per mail'}`);

  try {
    // Warm both paths (JIT, pool connections) with a small run first.
    const warmTransport = createRelayTransport(sinkUrl, { maxConnections });
    await rawLoop(warmTransport, 500);
    warmTransport.close();

    interface Round {
      raw: Awaited<ReturnType<typeof rawLoop>> & { rate: number };
      runs: Array<WorkerRun & { rate: number; ratio: number }>;
    }
    const rounds: Round[] = [];
    for (let round = 1; round <= roundCount; round++) {
      const rawTransport = createRelayTransport(sinkUrl, { maxConnections });
      const raw = await rawLoop(rawTransport, count, processSink?.pid);
      rawTransport.close();
      if (raw.failed > 0) throw new Error(`${raw.failed} raw sends failed`);
      const rawRate = rate(raw.sent, raw.ms);
      const runs: Round['runs'] = [];
      for (const engine of engines) {
        const run = await workerRun(engine, sinkUrl, count, processSink?.pid);
        const workerRate = rate(run.sent, run.drainMs);
        runs.push({ ...run, rate: workerRate, ratio: workerRate / rawRate });
      }
      rounds.push({ raw: { ...raw, rate: rawRate }, runs });
      if (roundCount > 1)
        console.log(
          `  round ${round}: raw ${formatNumber(rawRate)}/s; ${runs.map((r) => `${r.engine} ${formatNumber(r.rate)}/s (${r.ratio.toFixed(2)})`).join('; ')}`,
        );
    }

    console.log('');
    const cpuText = (cpu: Cpu) => `${cpu.main ?? '?'}% / ${cpu.sink ?? '-'}%`;
    const usPerMail = (ms: number | undefined, mails: number) => (ms === undefined || mails === 0 ? '-' : Math.round((ms * 1000) / mails));
    printTable(
      ['round', 'path', 'mails', 'seconds', 'mails/s', 'ratio to raw', 'CPU bench / sink', 'bench CPU µs/mail', 'PostgreSQL CPU µs/mail'],
      rounds.flatMap((r, i) => [
        [
          String(i + 1),
          'raw nodemailer pool (createRelayTransport)',
          r.raw.sent,
          (r.raw.ms / 1000).toFixed(2),
          formatNumber(r.raw.rate),
          '1.00',
          cpuText(r.raw.cpu),
          usPerMail(r.raw.cpu.mainMs, r.raw.sent),
          '-',
        ],
        ...r.runs.map((w) => [
          String(i + 1),
          `worker on ${w.engine}: Queued → ProviderSent`,
          w.sent,
          (w.drainMs / 1000).toFixed(2),
          formatNumber(w.rate),
          w.ratio.toFixed(2),
          cpuText(w.cpu),
          usPerMail(w.cpu.mainMs, w.sent),
          usPerMail(w.cpu.backendMs, w.sent),
        ]),
      ]),
    );
    const summary = engines.map((engine) => {
      const ratios = rounds.map((r) => r.runs.find((w) => w.engine === engine)!.ratio);
      const ratio = median(ratios);
      return {
        engine,
        ratio,
        rawMailsPerSecond: median(rounds.map((r) => r.raw.rate)),
        workerMailsPerSecond: median(rounds.map((r) => r.runs.find((w) => w.engine === engine)!.rate)),
        met: ratio >= GOAL_RATIO,
      };
    });
    console.log('');
    printTable(
      ['engine', `median of ${roundCount} round(s): raw mails/s`, 'worker mails/s', 'ratio', `goal ≥ ${GOAL_RATIO}`],
      summary.map((s) => [
        s.engine,
        formatNumber(s.rawMailsPerSecond),
        formatNumber(s.workerMailsPerSecond),
        s.ratio.toFixed(2),
        verdict(s.met),
      ]),
    );
    for (const r of rounds) {
      for (const w of r.runs) {
        if (!w.writes) continue;
        const tables = Object.entries(w.writes).map(
          ([table, t]) =>
            `${table} ${t.insertsPerMail.toFixed(2)} ins + ${t.updatesPerMail.toFixed(2)} upd/mail${t.hotShare === null ? '' : ` (${Math.round(t.hotShare * 100)} % HOT)`}`,
        );
        console.log(`  (${w.engine} row versions per delivered mail: ${tables.join('; ')})`);
      }
    }
    for (const engine of engines) {
      const queueMs = median(rounds.map((r) => r.runs.find((w) => w.engine === engine)!.queueMs));
      console.log(
        `  (${engine}: queueing ${count} mails through the submission service in batches of 500 took ${(queueMs / 1000).toFixed(2)} s = ${formatNumber(rate(count, queueMs))} mails/s)`,
      );
      for (const r of rounds) {
        const other = r.runs.find((w) => w.engine === engine)!.other;
        if (Object.keys(other).length > 0) console.log(`  (${engine}: other statuses at the end: ${JSON.stringify(other)})`);
      }
    }

    const file = writeResult('delivery', setup, {
      goal: { ratio: GOAL_RATIO },
      summary,
      rounds: rounds.map((r) => ({
        raw: { mails: r.raw.sent, seconds: r.raw.ms / 1000, mailsPerSecond: r.raw.rate, cpu: r.raw.cpu },
        worker: r.runs.map((w) => ({
          engine: w.engine,
          mails: w.sent,
          seconds: w.drainMs / 1000,
          mailsPerSecond: w.rate,
          ratio: w.ratio,
          queueSeconds: w.queueMs / 1000,
          cpu: w.cpu,
          writes: w.writes,
        })),
      })),
    });
    console.log(`\nresult: ${file}`);
  } finally {
    await inlineSink?.close();
    if (sinkDir) removeDir(sinkDir);
    await processSink?.stop();
  }
}

runMain(main);
