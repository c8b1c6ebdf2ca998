/**
 * Soak: intake, list reads from 20 simulated consoles, and delivery, all at once, for a
 * bounded time on each engine. The server runs as its own process (`node --import tsx server/src/main.ts`, as
 * `npm start` runs it), so its resident memory is measured alone (/proc/<pid>/status), delivering to a
 * discarding SMTP sink in a third process. Every interval prints the server's RSS, the list latency (p50/p99)
 * of the consoles' calls, intake and delivery rates, the backlog and the errors; the summary says whether
 * memory stayed flat after warm-up (the first quarter of the run), and whether anything failed.
 *
 * Bounded and repeatable: it stops by itself after --minutes (default 10; OUTBOX_SOAK_SECONDS overrides, e.g.
 * 120 for a short run), the load is paced (not as fast as possible), and every random choice (batch sizes,
 * sorts, paging, pauses) comes from a PRNG seeded with --seed (default 11).
 *
 *   npx tsx bench/soak.ts [--engine sqlite|postgres|all] [--minutes 10] [--interval 30] [--consoles 20]
 *                         [--intake-rate 50] [--seed 11]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { MAIL_SORTS, MailStatus } from '@outbox/contract';
import { createAuthService } from '../server/src/auth/auth.service.js';
import { openStore } from '../server/src/store/connection.js';
import { benchDir, formatNumber, printSetup, printTable, sleep, summarize, writeResult } from './support/common.js';
import { benchMail } from './support/mails.js';
import { enginesOption, parseBenchArgs, positiveNumberOption, resolveEngines, wholeNumberOption } from './support/options.js';
import type { Engine } from './support/outbox.js';
import { createScratchPlace } from './support/scratch-store.js';
import { startSinkProcess } from './support/sink-process.js';

const {
  engine: engineChoice,
  minutes,
  interval,
  consoles,
  'intake-rate': intakeRate,
  seed,
} = parseBenchArgs({
  engine: enginesOption('all', ['sqlite', 'postgres', 'all']),
  minutes: positiveNumberOption(10),
  interval: positiveNumberOption(30),
  consoles: wholeNumberOption(20),
  'intake-rate': positiveNumberOption(50),
  seed: wholeNumberOption(11, { min: 0 }),
});
const durationMs = process.env.OUTBOX_SOAK_SECONDS ? Number(process.env.OUTBOX_SOAK_SECONDS) * 1000 : minutes * 60_000;
if (!Number.isFinite(durationMs) || durationMs <= 0) throw new Error('OUTBOX_SOAK_SECONDS must be a positive number');
const intervalMs = Math.min(interval * 1000, Math.max(5_000, durationMs / 6));
// Ten minutes a half: a PostgreSQL that does not answer stops the run before the SQLite half, not after it.
const engines = await resolveEngines(engineChoice, { withoutPostgres: 'fail' });

const ADMIN = { username: 'soak', password: 'soak-password-not-secret' };

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
function prng(start: number): () => number {
  let state = start >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return Math.round(kb / 1024);
}

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

interface Interval {
  atSeconds: number;
  rssMb: number;
  listCalls: number;
  listP50: number;
  listP99: number;
  intakePerSecond: number;
  deliveredPerSecond: number;
  backlog: number;
  errors: number;
}

interface Counters {
  listLatencies: number[];
  accepted: number;
  errors: number;
  errorSamples: string[];
}

async function soak(engine: Engine) {
  const place = await createScratchPlace(engine, 'soak');
  const { dataDir, databaseUrl } = place;
  const sink = await startSinkProcess();
  let server: ChildProcess | undefined;
  try {
    const store = await openStore({ dataDir, databaseUrl, maxConnections: 1 });
    const apiKey = await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 86_400 }).createApiKey('soak');
    await store.close();

    const port = await freePort();
    server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: path.join(benchDir, '../server'),
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        SMTP_PORT: '0',
        DATA_DIR: dataDir,
        RELAY_URL: sink.url,
        LOG_LEVEL: 'warn',
        OUTBOX_ADMIN_USER: ADMIN.username,
        OUTBOX_ADMIN_PASSWORD: ADMIN.password,
        OUTBOX_CONSOLE_DIR: path.join(benchDir, 'no-console'),
        DATABASE_URL: databaseUrl ?? '',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let serverLog = '';
    server.stderr!.on('data', (chunk: Buffer) => (serverLog = (serverLog + chunk.toString()).slice(-5000)));
    const baseUrl = `http://127.0.0.1:${port}`;
    const readyBy = Date.now() + 60_000;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`the server exited (${server.exitCode}):\n${serverLog}`);
      if (Date.now() > readyBy) throw new Error(`the server did not answer /healthz within 60 s:\n${serverLog}`);
      const healthy = await fetch(`${baseUrl}/healthz`).then(
        (response) => response.ok,
        () => false,
      );
      if (healthy) break;
      await sleep(100);
    }
    const login = await fetch(`${baseUrl}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    const token = ((await login.json()) as { data: Array<{ token: string }> }).data[0]!.token;

    const counters: Counters = { listLatencies: [], accepted: 0, errors: 0, errorSamples: [] };
    const fail = (what: string) => {
      counters.errors++;
      if (counters.errorSamples.length < 10) counters.errorSamples.push(what);
    };
    const started = performance.now();
    const deadline = started + durationMs;
    const running = () => performance.now() < deadline && server!.exitCode === null;

    // Intake: batches of 1-20 mails, paced to --intake-rate mails per second on average.
    const intake = async () => {
      const random = prng(seed);
      let index = 0;
      while (running()) {
        const size = 1 + Math.floor(random() * 20);
        const batch = Array.from({ length: size }, () => benchMail(index++));
        const sent = performance.now();
        try {
          const response = await fetch(`${baseUrl}/api/v1/mail`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
            body: JSON.stringify(batch),
          });
          const text = await response.text();
          if (response.status === 202) counters.accepted += size;
          else fail(`intake ${response.status} ${text.slice(0, 200)}`);
        } catch (error) {
          fail(`intake: ${String(error)}`);
        }
        await sleep(Math.max(0, (size / intakeRate) * 1000 - (performance.now() - sent)));
      }
    };

    // A console: the list page every 0.5-1.5 s (a focused tab refreshing), a random sort and order, and
    // now and then the next page through the cursor, as the console's paging does.
    const console_ = async (n: number) => {
      const random = prng(seed * 1000 + n);
      let cursor: string | null = null;
      let sort: string = MAIL_SORTS[0];
      let order = 'desc';
      while (running()) {
        if (cursor === null || random() < 0.5) {
          sort = MAIL_SORTS[Math.floor(random() * MAIL_SORTS.length)]!;
          order = random() < 0.5 ? 'asc' : 'desc';
          cursor = null;
        }
        const query = `limit=50&sort=${sort}&order=${order}${cursor ? `&cursor=${cursor}` : ''}`;
        const sent = performance.now();
        try {
          const response = await fetch(`${baseUrl}/api/v1/mail/list?${query}`, {
            headers: { authorization: `Token ${token}`, 'content-type': 'application/json' },
          });
          const body = (await response.json()) as { meta?: { nextCursor: string | null } };
          if (response.status === 200) {
            counters.listLatencies.push(performance.now() - sent);
            cursor = random() < 0.3 ? (body.meta?.nextCursor ?? null) : null;
          } else fail(`list ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
        } catch (error) {
          fail(`list: ${String(error)}`);
        }
        await sleep(500 + random() * 1000);
      }
    };

    const statusCounts = async () => {
      const response = await fetch(`${baseUrl}/api/v1/mail/list?limit=1`, { headers: { authorization: `Token ${token}` } });
      return ((await response.json()) as { meta: { counts: Record<string, number> } }).meta.counts;
    };

    const intervals: Interval[] = [];
    const monitor = async () => {
      let lastDelivered = 0;
      let lastAccepted = 0;
      let lastErrors = 0;
      let lastAt = performance.now();
      while (running()) {
        await sleep(Math.min(intervalMs, Math.max(0, deadline - performance.now())));
        if (server!.exitCode !== null) break;
        const now = performance.now();
        const counts = await statusCounts().catch(() => undefined);
        const delivered = counts?.[String(MailStatus.ProviderSent)] ?? lastDelivered;
        const latency = summarize(counters.listLatencies.splice(0));
        const seconds = (now - lastAt) / 1000;
        const row: Interval = {
          atSeconds: Math.round((now - started) / 1000),
          rssMb: rssMb(server!.pid!),
          listCalls: latency.count,
          listP50: latency.p50,
          listP99: latency.p99,
          intakePerSecond: Math.round((counters.accepted - lastAccepted) / seconds),
          deliveredPerSecond: Math.round((delivered - lastDelivered) / seconds),
          backlog: (counts?.[String(MailStatus.Queued)] ?? 0) + (counts?.[String(MailStatus.Processing)] ?? 0),
          errors: counters.errors - lastErrors,
        };
        intervals.push(row);
        console.log(
          `  ${String(row.atSeconds).padStart(4)} s  RSS ${row.rssMb} MB  list ${row.listCalls} calls p50 ${row.listP50} ms p99 ${row.listP99} ms  intake ${row.intakePerSecond}/s  delivered ${row.deliveredPerSecond}/s  backlog ${row.backlog}  errors ${row.errors}`,
        );
        lastDelivered = delivered;
        lastAccepted = counters.accepted;
        lastErrors = counters.errors;
        lastAt = now;
      }
    };

    await Promise.all([intake(), ...Array.from({ length: consoles }, (_, n) => console_(n)), monitor()]);
    const alive = server.exitCode === null;
    const finalCounts = alive ? await statusCounts() : {};
    return { intervals, counters, alive, finalCounts, serverLog };
  } finally {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    await sink.stop();
    await place.remove();
  }
}

const setup = printSetup(
  `Soak: intake ${intakeRate} mails/s + ${consoles} consoles listing + delivery, ${durationMs / 1000} s per engine`,
  {
    engine: engines.join('+'),
    seconds: durationMs / 1000,
    intervalSeconds: intervalMs / 1000,
    consoles,
    intakeRate,
    seed,
  },
);

let failed = false;
const results: Record<string, unknown> = {};
for (const engine of engines) {
  console.log(`\n── ${engine} ──`);
  const { intervals, counters, alive, finalCounts, serverLog } = await soak(engine);
  // Warm-up: the first quarter of the run (caches, JIT, SQLite page cache, the pool filling up).
  const afterWarmUp = intervals.slice(Math.max(1, Math.floor(intervals.length / 4)));
  const rss = afterWarmUp.map((row) => row.rssMb);
  const rssGrowth = rss.length >= 2 ? rss.at(-1)! - rss[0]! : 0;
  const p99s = intervals.map((row) => row.listP99).filter(Number.isFinite);
  const delivery = afterWarmUp.map((row) => row.deliveredPerSecond);
  const summary = {
    intervals,
    rssAfterWarmUpMb: { first: rss[0], last: rss.at(-1), min: Math.min(...rss), max: Math.max(...rss), growth: rssGrowth },
    listP99Ms: { min: Math.min(...p99s), max: Math.max(...p99s) },
    deliveredPerSecondAfterWarmUp: { min: Math.min(...delivery), max: Math.max(...delivery) },
    accepted: counters.accepted,
    finalCounts,
    errors: counters.errors,
    errorSamples: counters.errorSamples,
    serverAlive: alive,
  };
  results[engine] = summary;
  printTable(
    ['figure', 'value'],
    [
      ['mails accepted', formatNumber(counters.accepted)],
      ['RSS after warm-up (first → last, min-max)', `${rss[0]} → ${rss.at(-1)} MB (${Math.min(...rss)}-${Math.max(...rss)})`],
      ['list p99 per interval (min-max)', `${Math.min(...p99s)}-${Math.max(...p99s)} ms`],
      ['delivered/s per interval after warm-up (min-max)', `${Math.min(...delivery)}-${Math.max(...delivery)}`],
      ['errors', counters.errors],
      ['server alive at the end', alive ? 'yes' : 'NO'],
    ],
  );
  if (counters.errorSamples.length > 0) console.log(`error samples:\n  ${counters.errorSamples.join('\n  ')}`);
  if (!alive) console.log(`server log (tail):\n${serverLog}`);
  if (counters.errors > 0 || !alive) failed = true;
}
const file = writeResult('soak', setup, results);
console.log(`\nresult: ${file}`);
process.exit(failed ? 1 : 0);
