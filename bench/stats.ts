/**
 * Statistics: what `GET /api/v1/stats` costs over 30 days of hourly counters for 100 applications,
 * and what counting costs the writes it rides on.
 *
 * 1. Query. Fills `statistics_hourly` with `--apps` applications × `--days` days of hours (each application a row
 *    per hour, and the row of all applications), plus `--history-days` older days so the table is as large as 13
 *    months would make it, through the product's own upsert (`writeStatistics`). Then times, over HTTP on loopback
 *    (the app listening in this process, one keep-alive connection, an operator's token and an API key), the 30-day
 *    hourly answer for every application, for one application, and the daily one: median and p95 of `--runs`
 *    requests each, and the CPU each request cost on average (this process's, which serves it and reads the answer,
 *    and on PostgreSQL the server's backends too, from /proc): on a shared, loaded machine the wall time's p95 is
 *    mostly the other work's, the CPU much less so.
 *    The size of the counters table is what matters here, not the number of mails: a read is one row per hour.
 * 2. Counting. A group of 50 new mails (`insertMails`) and a group commit of 50 delivery outcomes
 *    (`applyTransitions` + the recipients' UPDATE), as intake and the worker make them, each timed whole and its
 *    statistics upsert (`writeStatistics`, the one statement counting adds) timed alone inside it; `count µs/mail`
 *    times the in-memory counting alone. The last column is what counting adds to the rest of the transaction's
 *    process CPU (on SQLite the store's work is in this process; on PostgreSQL the server's is not). Timing the
 *    upsert inside the transaction, rather than alternating with and without it, keeps the figure out of the noise
 *    of a busy machine.
 *
 *   npx tsx bench/stats.ts [--apps 100] [--days 30] [--history-days 0] [--runs 50] [--mails 2000] [--engine sqlite|postgres|all]
 */
import http from 'node:http';
import os from 'node:os';
import type { SubmitMailRequest } from '@outbox/contract';
import { buildApp } from '../server/src/app.js';
import { createAuthService, type ApiKeyPrincipal } from '../server/src/auth/auth.service.js';
import { ManualClock } from '../server/src/clock.js';
import { decideAttempt } from '../server/src/delivery/outcome-policy.js';
import { recordRecipientOutcomes } from '../server/src/delivery/delivery.repository.js';
import { createRetryPolicy } from '../server/src/delivery/retry-policy.js';
import { claimTransition } from '../server/src/delivery/lease-transitions.js';
import { acceptedCreation } from '../server/src/mail/lifecycle.js';
import type { StatusCountMoves } from '../server/src/mail/transition-types.js';
import { applyTransitions } from '../server/src/mail/write/apply.js';
import { moveStatusCounts } from '../server/src/mail/write/counters.js';
import { insertMails } from '../server/src/mail/write/create.js';
import { countLatency, countStatistic, createStatisticsMoves, HOUR_MS } from '../server/src/statistics/statistics-moves.js';
import { writeStatistics } from '../server/src/statistics/statistics.repository.js';
import type { Store } from '../server/src/store/connection.js';
import { prepareJson } from '../server/src/submission/submission-preparation.js';
import { httpGet, printSetup, printTable, summarize, writeResult } from './support/common.js';
import { enginesOption, parseBenchArgs, resolveEngines, wholeNumberOption } from './support/options.js';
import { openScratchStore } from './support/scratch-store.js';
import { postgresBackendCpu } from './support/postgres.js';
import { fillCounters } from './support/statistics.js';

const {
  apps: APPS,
  days: DAYS,
  'history-days': HISTORY_DAYS,
  runs: RUNS,
  mails: MAILS,
  engine: engineChoice,
} = parseBenchArgs({
  apps: wholeNumberOption(100),
  days: wholeNumberOption(30),
  'history-days': wholeNumberOption(0, { min: 0 }),
  runs: wholeNumberOption(50),
  mails: wholeNumberOption(2000),
  engine: enginesOption('all', ['sqlite', 'postgres', 'all']),
});
const BATCH = 50;
const NOW = Date.parse('2026-11-26T10:30:00Z');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A query's wall times, and its CPU per request in ms: this process's (it serves the request) and the store server's (PostgreSQL). */
type QueryTiming = ReturnType<typeof summarize> & { cpuMs: number; storeCpuMs: number | null; bytes: number };

interface QueryFigures {
  tableRows: number;
  fillMs: number;
  allHourly: QueryTiming;
  oneHourly: QueryTiming;
  allDaily: QueryTiming;
}

async function measureQuery(store: Store): Promise<QueryFigures> {
  const clock = new ManualClock(NOW);
  const { app, services } = await buildApp({ store, clock, passwordCost: 1024 });
  await app.ready();
  try {
    await services.auth.addOperator('bench', 'bench password 1');
    const login = await app.inject({ method: 'POST', url: '/api/v1/login', payload: { username: 'bench', password: 'bench password 1' } });
    const token = (login.json() as { data: Array<{ token: string }> }).data[0]!.token;
    const keys: string[] = [];
    const ids: number[] = [];
    for (let i = 0; i < APPS; i++) {
      const key = await services.auth.createApiKey(`app-${i}`);
      keys.push(key);
      ids.push((await services.auth.findApiKeyPrincipal(key))!.id);
    }
    const end = Math.floor(NOW / HOUR_MS) * HOUR_MS + HOUR_MS;
    const began = performance.now();
    await fillCounters(store, ids, end - (DAYS + HISTORY_DAYS) * 24 * HOUR_MS, end);
    const fillMs = performance.now() - began;
    const tableRows = Number(
      (await store.db
        .selectFrom('statistics_hourly')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirst())!.n,
    );
    // Over a socket on loopback, as a client asks: inject's in-memory response cost more CPU than the server's own
    // write (light-my-request copies and re-decodes a 205 KB answer), which a real request does not pay.
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const range = `from=${new Date(end - DAYS * 24 * HOUR_MS).toISOString()}&to=${new Date(end).toISOString()}`;
    const time = async (key: string, query: string, buckets: number): Promise<QueryTiming> => {
      const samples: number[] = [];
      let cpuUs = 0;
      let bytes = 0;
      let storeCpu: (() => Promise<number | undefined>) | undefined;
      for (let run = 0; run < RUNS + 3; run++) {
        // The first requests compile the route's schemas: neither their time nor their CPU counts.
        if (run === 3 && store.engine === 'postgres') storeCpu = await postgresBackendCpu(store.db);
        const cpu = process.cpuUsage();
        const started = performance.now();
        const response = await httpGet(agent, `${address}/api/v1/stats?${query}`, key);
        const elapsed = performance.now() - started;
        const used = process.cpuUsage(cpu);
        if (response.status !== 200) throw new Error(`GET /api/v1/stats?${query}: ${response.status} ${response.body}`);
        bytes = Buffer.byteLength(response.body);
        const answer = JSON.parse(response.body) as { data: Array<{ buckets: unknown[]; totals: { sent: number } }> };
        if (answer.data[0]!.buckets.length !== buckets || answer.data[0]!.totals.sent === 0)
          throw new Error(`unexpected answer to ${query}`);
        if (run >= 3) {
          samples.push(elapsed);
          cpuUs += used.user + used.system;
        }
      }
      const storeMs = storeCpu ? await storeCpu() : undefined;
      return {
        ...summarize(samples),
        cpuMs: cpuUs / 1000 / RUNS,
        storeCpuMs: storeMs === undefined ? null : storeMs / RUNS,
        bytes,
      };
    };
    const figures = {
      tableRows,
      fillMs,
      allHourly: await time(token, `${range}&bucket=hour`, DAYS * 24),
      oneHourly: await time(keys[Math.floor(APPS / 2)]!, `${range}&bucket=hour`, DAYS * 24),
      allDaily: await time(token, `${range}&bucket=day`, DAYS + 1),
    };
    agent.destroy();
    return figures;
  } finally {
    await app.close();
  }
}

interface CostFigures {
  intake: { txMs: number; txCpuUsPerMail: number; upsertMs: number; upsertCpuUsPerMail: number };
  delivery: { txMs: number; txCpuUsPerMail: number; upsertMs: number; upsertCpuUsPerMail: number };
  countUsPerMail: number;
}

/** Time and process CPU (µs) of `work`. */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number; cpuUs: number }> {
  const cpu = process.cpuUsage();
  const began = performance.now();
  const value = await work();
  const used = process.cpuUsage(cpu);
  return { value, ms: performance.now() - began, cpuUs: used.user + used.system };
}

async function measureCost(store: Store): Promise<CostFigures> {
  const clock = new ManualClock(NOW);
  const auth = createAuthService({ store, clock, sessionTtlSeconds: 3600 });
  const principals: ApiKeyPrincipal[] = [];
  for (let i = 0; i < 4; i++) principals.push((await auth.findApiKeyPrincipal(await auth.createApiKey(`cost-${i}`)))!);
  const request = (i: number): SubmitMailRequest => ({
    fromMail: 'shop@example.com',
    to: [{ recipientName: 'Ann', recipientMail: `ann${i}@example.net` }],
    subject: `Order ${i}`,
    text: 'Thanks!',
  });
  const samples = {
    intake: { tx: [] as number[], txCpu: [] as number[], upsert: [] as number[], upsertCpu: [] as number[] },
    delivery: { tx: [] as number[], txCpu: [] as number[], upsert: [] as number[], upsertCpu: [] as number[] },
  };
  const retryPolicy = createRetryPolicy();
  for (let start = 0; start + BATCH <= MAILS; start += BATCH) {
    const at = clock.now();
    // Intake: a group of 50 from four applications, as a submission's group commit writes it.
    const prepared = Array.from({ length: BATCH }, (_, i) => prepareJson(principals[i % 4]!, request(start + i), i, at));
    let upsert = { ms: 0, cpuUs: 0 };
    const intake = await timed(() =>
      store.db.transaction().execute(async (trx) => {
        const counts: StatusCountMoves = new Map();
        const statistics = createStatisticsMoves();
        const inserted = await insertMails(
          trx,
          prepared.map((p) => ({ ...p.mail, created: acceptedCreation(at, 'bench') })),
          { counts, statistics },
        );
        await moveStatusCounts(trx, counts);
        upsert = await timed(() => writeStatistics(trx, statistics));
        return inserted;
      }),
    );
    samples.intake.tx.push(intake.ms);
    samples.intake.txCpu.push(intake.cpuUs / BATCH);
    samples.intake.upsert.push(upsert.ms);
    samples.intake.upsertCpu.push(upsert.cpuUs / BATCH);
    const ids = intake.value;

    // Delivery: claim (untimed), then the outcomes' commit, as outcome-commit.ts makes it.
    const lease = { owner: 'bench', expiresAt: at + 60_000 };
    await store.db.transaction().execute((trx) =>
      applyTransitions(
        trx,
        ids.map((id) => claimTransition(id, at, lease)),
      ),
    );
    clock.advance(1_500);
    const sentAt = clock.now();
    const decisions = ids.map((id, i) =>
      decideAttempt(
        {
          mail: { id, attempts: 1, received_at: at, lease_expires_at: lease.expiresAt },
          outcome: { kind: 'sent', reply: '250 2.0.0 OK', accepted: [], rejected: [], durationMs: 3 },
          at: sentAt,
          recipients: { all: [{ address: `ann${start + i}@example.net`, outcome: 'pending' }], targets: [`ann${start + i}@example.net`] },
        },
        retryPolicy,
        'bench',
      ),
    );
    const delivery = await timed(() =>
      store.db.transaction().execute(async (trx) => {
        await recordRecipientOutcomes(
          trx,
          store.engine,
          decisions.flatMap((d) => d.recipients.map((u) => ({ ...u, leaseExpiresAt: lease.expiresAt }))),
          'bench',
          sentAt,
        );
        const counts: StatusCountMoves = new Map();
        const statistics = createStatisticsMoves();
        const { moved } = await applyTransitions(
          trx,
          decisions.map((d) => d.transition),
          { counts, statistics },
        );
        if (moved.length !== BATCH) throw new Error(`only ${moved.length} of ${BATCH} outcomes recorded`);
        await moveStatusCounts(trx, counts);
        upsert = await timed(() => writeStatistics(trx, statistics));
      }),
    );
    samples.delivery.tx.push(delivery.ms);
    samples.delivery.txCpu.push(delivery.cpuUs / BATCH);
    samples.delivery.upsert.push(upsert.ms);
    samples.delivery.upsertCpu.push(upsert.cpuUs / BATCH);
  }
  // The counting in memory alone: what a group of 50 sent mails adds before its upsert.
  const loops = 2_000;
  const cpu = process.cpuUsage();
  for (let n = 0; n < loops; n++) {
    const moves = createStatisticsMoves();
    for (let i = 0; i < BATCH; i++) {
      countStatistic(moves, 'sent', principals[i % 4]!.id, NOW);
      countLatency(moves, principals[i % 4]!.id, NOW, 1_500);
    }
  }
  const used = process.cpuUsage(cpu);
  const figures = (kind: 'intake' | 'delivery') => ({
    txMs: median(samples[kind].tx),
    txCpuUsPerMail: median(samples[kind].txCpu),
    upsertMs: median(samples[kind].upsert),
    upsertCpuUsPerMail: median(samples[kind].upsertCpu),
  });
  return { intake: figures('intake'), delivery: figures('delivery'), countUsPerMail: (used.user + used.system) / (loops * BATCH) };
}

const engines = await resolveEngines(engineChoice, { withoutPostgres: 'skip' });
const setup = printSetup(`Statistics: GET /api/v1/stats over ${DAYS} days of hours for ${APPS} applications, and the cost of counting`, {
  engine: engines.join('+'),
  apps: APPS,
  days: DAYS,
  historyDays: HISTORY_DAYS,
  runs: RUNS,
  mails: MAILS,
  batch: BATCH,
});
const queryRows: Array<Array<string | number>> = [];
const costRows: Array<Array<string | number>> = [];
const results: Record<string, unknown> = {};
for (const engine of engines) {
  for (const part of ['query', 'cost'] as const) {
    const scratch = await openScratchStore(engine, `stats_${part}`);
    const { store } = scratch;
    try {
      if (part === 'query') {
        const q = await measureQuery(store);
        results[`${engine}.query`] = q;
        for (const [name, s] of [
          ['all applications, hourly', q.allHourly],
          ['one application (API key), hourly', q.oneHourly],
          ['all applications, daily', q.allDaily],
        ] as const)
          queryRows.push([
            engine,
            q.tableRows,
            name,
            s.p50.toFixed(2),
            s.p95.toFixed(2),
            s.p95 <= 20 ? 'yes' : 'NO',
            s.cpuMs.toFixed(2),
            s.storeCpuMs === null ? '' : s.storeCpuMs.toFixed(2),
            s.bytes,
          ]);
      } else {
        const c = await measureCost(store);
        results[`${engine}.cost`] = c;
        for (const kind of ['intake', 'delivery'] as const) {
          const f = c[kind];
          const share = (f.upsertCpuUsPerMail + c.countUsPerMail) / (f.txCpuUsPerMail - f.upsertCpuUsPerMail);
          costRows.push([
            engine,
            kind,
            f.txMs.toFixed(2),
            f.upsertMs.toFixed(2),
            f.txCpuUsPerMail.toFixed(1),
            f.upsertCpuUsPerMail.toFixed(2),
            c.countUsPerMail.toFixed(2),
            `${(share * 100).toFixed(1)} %`,
          ]);
        }
      }
    } finally {
      await scratch.close();
    }
  }
}
printTable(
  [
    'engine',
    'table rows',
    `${DAYS}-day query`,
    'p50 ms',
    'p95 ms',
    'p95 ≤ 20 ms',
    'CPU ms/request',
    'PostgreSQL CPU ms/request',
    'answer bytes',
  ],
  queryRows,
);
console.log(
  `load average after: ${os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join('/')}`,
);
printTable(
  ['engine', 'group of 50', 'tx ms', 'upsert ms', 'tx CPU µs/mail', 'upsert CPU µs/mail', 'count µs/mail', 'statistics / rest of tx'],
  costRows,
);
console.log(`result: ${writeResult('stats', setup, results)}`);
