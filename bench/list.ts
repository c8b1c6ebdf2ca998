/**
 * The list endpoint at scale: `GET /api/v1/mail/list?limit=50` on a store filled with
 * `insertDemoMails` (the `demo --count N` data), per sort, on page 1 and on a deep page, plus a status filter
 * and a text search. Goal: p99 ≤ 10 ms, and a deep page within 1.5× of page 1 (keyset paging). Each page is
 * asked `--samples` times one after the other (fewer when that takes over 2 s; at least 20), after 5 warm-ups.
 *
 *   npx tsx bench/list.ts [--count 200000] [--engine sqlite|postgres] [--samples 200] [--deep-pages 10000] [--fresh] [--drop] [--only TEXT] [--tag NAME]
 *                         [--random N] [--seed 20]
 *
 * Cases: every sort, status filters, text search (a common word, a rare one, one that matches nothing, a
 * medium one), received-date ranges (relative to the newest mail) and their combinations.
 * The load average before and after the run is printed beside the figures: the machine is shared.
 *
 * The deep page is reached the way a client would after following nextCursor that many times: the cursor
 * (server/src/list/cursor.ts: sort, order, last row's sort value and id, direction) is built for the row at
 * position pages × 50 of that ordering, found once with an OFFSET query outside the timing. With fewer rows
 * than 10,000 pages, the deep page is the one at 90% of the matching rows.
 *
 * Filling a store takes a while (about a minute for 200,000 on SQLite here), so the filled store is kept for
 * the next run: bench/results/cache/list-sqlite-<count>/ or the PostgreSQL database bench_list_<count>.
 * `--fresh` rebuilds it; `--drop` removes it after the run.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { sql } from 'kysely';
import { MAIL_SORTS, type MailSort } from '@outbox/contract';
import {
  formatNumber,
  httpGet,
  type LatencySummary,
  printSetup,
  printTable,
  runMain,
  type Setup,
  summarize,
  verdict,
  writeResult,
} from './support/common.js';
import { prepareDemoStore } from './support/demo-store.js';
import { listUrl, newestReceivedAt, randomQuery, searchTerms, seededRandom, type RandomQuery } from './support/random-list.js';
import {
  engineOption,
  flagOption,
  optionalWholeNumberOption,
  parseBenchArgs,
  tagOption,
  textOption,
  wholeNumberOption,
} from './support/options.js';
import { operatorToken, startBenchOutbox, type BenchOutbox } from './support/outbox.js';

/**
 * The column of each sort, and the list's cursor format (server/src/list/list-plan.ts), written out here so
 * that this file runs unchanged in an older checkout for an A/B comparison.
 */
const SORT_COLUMNS = {
  receivedDate: 'received_at',
  lastUpdate: 'last_update_at',
  providerSentDate: 'provider_sent_at',
  subject: 'subject',
  status: 'status',
  from: 'from_mail',
  to: 'first_to_mail',
} as const satisfies Record<MailSort, string>;
const encodeCursor = (c: { sort: MailSort; order: 'asc' | 'desc'; value: number | string; id: number; direction: 'next' }) =>
  Buffer.from(JSON.stringify([c.sort, c.order, c.value, c.id, c.direction]), 'utf8').toString('base64url');

const GOAL_P99_MS = 10;
const GOAL_DEEP_RATIO = 1.5;
const LIMIT = 50;
const MEASURE_BUDGET_MS = 2_000;

const values = parseBenchArgs({
  engine: engineOption(),
  count: wholeNumberOption(200_000),
  samples: wholeNumberOption(200),
  'deep-pages': wholeNumberOption(10_000),
  fresh: flagOption(),
  drop: flagOption(),
  /** Only the cases whose name contains this text (to rerun a few when the machine is quieter). */
  only: textOption(),
  /** The kept store's tag: bench_list_<count>_<tag>. */
  tag: tagOption(),
  /** The random workload instead of the fixed cases: this many queries, each asked once (below). */
  random: optionalWholeNumberOption(),
  seed: wholeNumberOption(20, { min: 0 }),
});
const { engine, count, samples, 'deep-pages': deepPages } = values;

interface Case {
  name: string;
  sort: MailSort;
  statuses?: number[];
  q?: string;
  /** Received within this many hours before the newest mail (receivedFrom only; receivedTo one ms after the newest). */
  lastHours?: number;
}

const CASES: Case[] = [
  ...MAIL_SORTS.map((sort) => ({ name: `sort=${sort}`, sort })),
  { name: 'status=4 (ProviderError, 6%)', sort: 'receivedDate', statuses: [4] },
  { name: 'status=0,4 (14%)', sort: 'receivedDate', statuses: [0, 4] },
  { name: 'status=2 (Processing, 2%)', sort: 'receivedDate', statuses: [2] },
  { name: 'status=4 sort=subject', sort: 'subject', statuses: [4] },
  { name: 'status=4 sort=to', sort: 'to', statuses: [4] },
  { name: 'q=shipped (common)', sort: 'receivedDate', q: 'shipped' },
  { name: 'q=kowalski7 (rare)', sort: 'receivedDate', q: 'kowalski7' },
  { name: 'q=kowalski77 (rarer)', sort: 'receivedDate', q: 'kowalski77' },
  { name: 'q=nowhere-at-all (no match)', sort: 'receivedDate', q: 'nowhere-at-all' },
  { name: 'q=ski7 (medium)', sort: 'receivedDate', q: 'ski7' },
  { name: 'q=shipped status=4', sort: 'receivedDate', statuses: [4], q: 'shipped' },
  { name: 'q=shipped status=0,4', sort: 'receivedDate', statuses: [0, 4], q: 'shipped' },
  { name: 'q=shipped status=2', sort: 'receivedDate', statuses: [2], q: 'shipped' },
  { name: 'q=kowalski7 status=4', sort: 'receivedDate', statuses: [4], q: 'kowalski7' },
  { name: 'q=shipped sort=subject', sort: 'subject', q: 'shipped' },
  { name: 'q=shipped sort=to', sort: 'to', q: 'shipped' },
  { name: 'q=kowalski7 sort=to', sort: 'to', q: 'kowalski7' },
  { name: 'q=shipped sort=status', sort: 'status', q: 'shipped' },
  { name: 'q=shipped status=4 sort=subject', sort: 'subject', statuses: [4], q: 'shipped' },
  { name: 'last 1 h', sort: 'receivedDate', lastHours: 1 },
  { name: 'last 24 h', sort: 'receivedDate', lastHours: 24 },
  { name: 'last 7 d', sort: 'receivedDate', lastHours: 168 },
  { name: 'last 1 h sort=subject', sort: 'subject', lastHours: 1 },
  { name: 'last 24 h sort=subject', sort: 'subject', lastHours: 24 },
  { name: 'last 7 d sort=to', sort: 'to', lastHours: 168 },
  { name: 'last 24 h sort=status', sort: 'status', lastHours: 24 },
  { name: 'last 7 d sort=status', sort: 'status', lastHours: 168 },
  { name: 'last 24 h status=4', sort: 'receivedDate', statuses: [4], lastHours: 24 },
  { name: 'last 24 h status=0,4 sort=lastUpdate', sort: 'lastUpdate', statuses: [0, 4], lastHours: 24 },
  { name: 'last 7 d q=shipped', sort: 'receivedDate', q: 'shipped', lastHours: 168 },
  { name: 'last 24 h q=kowalski7', sort: 'receivedDate', q: 'kowalski7', lastHours: 24 },
  { name: 'last 24 h q=shipped status=4 sort=subject', sort: 'subject', statuses: [4], q: 'shipped', lastHours: 24 },
];

/** The kept store of `count` demo mails for this engine (filled on the first run; --fresh rebuilds). */
const prepareStore = () => prepareDemoStore({ engine, count, tag: values.tag, fresh: values.fresh, drop: values.drop });

/**
 * This process's CPU time (user + system) during `run`, in ms: the server and the client, which share it. The
 * PostgreSQL server's own CPU is in its processes (`databaseCpuSince`). On a loaded machine it is the steadier figure.
 */
async function withCpu<T>(run: () => Promise<T>): Promise<{ value: T; cpuMs: number }> {
  const before = process.cpuUsage();
  const value = await run();
  const used = process.cpuUsage(before);
  return { value, cpuMs: (used.user + used.system) / 1000 };
}

const round2 = (value: number) => Math.round(value * 100) / 100;

const CLOCK_TICK_MS = 10;
const dbCpuNote = (m: { dbCpuMs: number }) => (m.dbCpuMs > 0 ? ` + PostgreSQL ${m.dbCpuMs} ms` : '');

/**
 * PostgreSQL: the CPU time (user + system, in 10 ms ticks) used so far by each server process of this
 * database (their title names it), by process id, read from /proc; empty elsewhere. Taken before and after a
 * request, outside `withCpu`, it gives the database's share of the request (`databaseCpuSince`), which
 * `withCpu` cannot see.
 */
function databaseCpuTicks(databaseName: string | undefined): Map<string, number> {
  const ticks = new Map<string, number>();
  if (databaseName === undefined || process.platform !== 'linux') return ticks;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const title = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!title.startsWith('postgres:') || !title.includes(` ${databaseName} `)) continue;
      // Fields after the command name in parentheses: utime and stime are the 12th and 13th.
      const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks.set(pid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return ticks;
}

/** ms of CPU the database's processes used since `before`; a process that ended in between is left out (its last ticks are gone). */
function databaseCpuSince(before: Map<string, number>, databaseName: string | undefined): number {
  let ticks = 0;
  for (const [pid, now] of databaseCpuTicks(databaseName)) ticks += now - (before.get(pid) ?? 0);
  return ticks * CLOCK_TICK_MS;
}

interface CaseResult {
  name: string;
  matching: number;
  deepPage: number;
  page1: LatencySummary & { cpuMs: number; dbCpuMs: number };
  deep: LatencySummary & { cpuMs: number; dbCpuMs: number };
  met: boolean;
  /** One-minute load average when the case finished. */
  load1: number;
}

async function main(): Promise<void> {
  const prepared = await prepareStore();
  const setup = printSetup('List endpoint: GET /api/v1/mail/list?limit=50, page 1 and a deep page, per sort and filter', {
    engine,
    count,
    limit: LIMIT,
    samplesPerCase: samples,
    deepPages,
    server: 'start(config) in this process, WORKER=off',
    client: 'node:http keep-alive, sequential',
  });

  const outbox = await startBenchOutbox({
    engine,
    label: 'list',
    dataDir: prepared.dataDir,
    ...(prepared.databaseUrl ? { databaseUrl: prepared.databaseUrl } : {}),
    env: { WORKER: 'off' },
  });
  let agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const databaseName = prepared.databaseUrl ? new URL(prepared.databaseUrl).pathname.slice(1) : undefined;
  const results: CaseResult[] = [];
  try {
    const token = await operatorToken(outbox);
    const { db } = outbox.running.store;

    const newest = await newestReceivedAt(db);
    if (values.random !== undefined) {
      await runRandom(outbox, token, newest, values.random, values.seed, setup, databaseName);
      return;
    }
    const { only } = values;
    const cases = only ? CASES.filter((c) => c.name.includes(only)) : CASES;
    for (const c of cases) {
      const column = SORT_COLUMNS[c.sort];
      const receivedFrom = c.lastHours !== undefined ? newest - c.lastHours * 3_600_000 : undefined;
      // The rows of this ordering and filter, to find the deep page's cursor (outside the timing).
      let base = db.selectFrom('mails');
      if (c.statuses) base = base.where('status', 'in', c.statuses);
      if (c.q) base = base.where(sql<boolean>`search_text like ${`%${c.q}%`}`);
      if (receivedFrom !== undefined) base = base.where('received_at', '>=', receivedFrom);
      const matching = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
      const deepRow = Math.max(0, Math.min(deepPages * LIMIT, Math.floor(matching * 0.9)) - 1);
      const anchor = await base
        .select([column, 'id'])
        .orderBy(column, 'desc')
        .orderBy('id', 'desc')
        .limit(1)
        .offset(deepRow)
        .executeTakeFirst();

      const params = new URLSearchParams({ limit: String(LIMIT), sort: c.sort, order: 'desc' });
      if (c.statuses) params.set('status', c.statuses.join(','));
      if (c.q) params.set('q', c.q);
      if (receivedFrom !== undefined) params.set('receivedFrom', new Date(receivedFrom).toISOString());
      const page1Url = `${outbox.baseUrl}/api/v1/mail/list?${params}`;
      const deepParams = new URLSearchParams(params);
      if (anchor)
        deepParams.set(
          'cursor',
          encodeCursor({
            sort: c.sort,
            order: 'desc',
            value: (anchor as Record<string, number | string>)[column]!,
            id: anchor.id,
            direction: 'next',
          }),
        );
      const deepUrl = `${outbox.baseUrl}/api/v1/mail/list?${deepParams}`;

      // At most `samples` requests or MEASURE_BUDGET_MS per page (slow cases get fewer samples), after 5 warm-ups.
      // CPU per request (this process: server and client) over the timed requests, beside the latencies.
      const measure = async (url: string): Promise<LatencySummary & { cpuMs: number; dbCpuMs: number }> => {
        const times: number[] = [];
        let cpuMs = 0;
        let dbCpuMs = 0;
        const deadline = performance.now() + MEASURE_BUDGET_MS;
        for (let i = 0; i < samples + 5 && (i < 25 || performance.now() < deadline); i++) {
          const dbCpuBefore = databaseCpuTicks(databaseName);
          const started = performance.now();
          const { value: answer, cpuMs: used } = await withCpu(() => httpGet(agent, url, token));
          const ms = performance.now() - started;
          const dbUsed = databaseCpuSince(dbCpuBefore, databaseName);
          if (answer.status !== 200) throw new Error(`${c.name}: ${answer.status} ${answer.body.slice(0, 300)}`);
          if (i >= 5) {
            times.push(ms);
            cpuMs += used;
            dbCpuMs += dbUsed;
          }
        }
        const n = Math.max(times.length, 1);
        return { ...summarize(times), cpuMs: round2(cpuMs / n), dbCpuMs: round2(dbCpuMs / n) };
      };
      // A fresh connection per case: the matching count above can take longer than the server's keep-alive
      // timeout, which closes the idle socket under the agent (ECONNRESET on the next request).
      agent.destroy();
      agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const page1 = await measure(page1Url);
      const deep = await measure(deepUrl);
      const met = page1.p99 <= GOAL_P99_MS && deep.p99 <= GOAL_P99_MS && deep.p99 <= page1.p99 * GOAL_DEEP_RATIO;
      results.push({ name: c.name, matching, deepPage: Math.floor((deepRow + 1) / LIMIT) + 1, page1, deep, met, load1: os.loadavg()[0]! });
      console.log(
        `  ${c.name}: page 1 p50 ${page1.p50} / p99 ${page1.p99} ms (CPU ${page1.cpuMs} ms${dbCpuNote(page1)}); page ${formatNumber(Math.floor((deepRow + 1) / LIMIT) + 1)} p50 ${deep.p50} / p99 ${deep.p99} ms (CPU ${deep.cpuMs} ms${dbCpuNote(deep)})`,
      );
    }

    console.log('');
    printTable(
      [
        'case',
        'matching',
        'deep page',
        'n',
        'p1 p50',
        'p1 p99',
        'p1 CPU',
        'p1 PG CPU',
        'deep p50',
        'deep p99',
        'deep CPU',
        'deep PG CPU',
        'deep/p1 p99',
        'load',
        `goal p99 ≤ ${GOAL_P99_MS}, ≤ ${GOAL_DEEP_RATIO}×`,
      ],
      results.map((r) => [
        r.name,
        formatNumber(r.matching),
        formatNumber(r.deepPage),
        Math.min(r.page1.count, r.deep.count),
        r.page1.p50,
        r.page1.p99,
        r.page1.cpuMs,
        r.page1.dbCpuMs,
        r.deep.p50,
        r.deep.p99,
        r.deep.cpuMs,
        r.deep.dbCpuMs,
        (r.deep.p99 / r.page1.p99).toFixed(2),
        r.load1.toFixed(1),
        verdict(r.met),
      ]),
    );
    console.log(
      `  load average after the run: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')} (before: ${setup.loadAverage.join(' / ')})`,
    );
    if (prepared.filledSeconds !== undefined)
      console.log(`  (the store was filled in ${prepared.filledSeconds.toFixed(1)} s before the run)`);
    const file = writeResult('list', setup, {
      goal: { p99Ms: GOAL_P99_MS, deepToPage1: GOAL_DEEP_RATIO },
      fillSeconds: prepared.filledSeconds ?? null,
      cases: results,
    });
    console.log(`\nresult: ${file}`);
  } finally {
    agent.destroy();
    await outbox.close();
    await prepared.cleanup();
  }
}

/**
 * `--random N`: N queries of page 1 (limit 50), each asked once over HTTP: a random sort and order, half with a
 * random status subset, 60% with a search term from a random frequency decade, 30% with a date range (the
 * last 1 h … 14 d). The plan of each (the service's `plan`, asked again outside the timing; "old" for a
 * checkout without it) groups the figures: p50, p99 and max per plan. 20 warm-up queries of another seed first.
 */
async function runRandom(
  outbox: BenchOutbox,
  token: string,
  newest: number,
  n: number,
  seed: number,
  setup: Setup,
  databaseName: string | undefined,
) {
  const random = seededRandom(seed);
  const terms = await searchTerms(outbox.running.store.db, random, count);
  console.log(`search terms per decade: ${[...terms].map(([d, t]) => `${d} ${t.length}`).join(', ')}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const urlOf = (query: RandomQuery) => listUrl(outbox.baseUrl, newest, query, LIMIT);
  const warm = seededRandom(seed + 1);
  for (let i = 0; i < 20; i++) await httpGet(agent, urlOf(randomQuery(warm, terms)), token);
  const asked: Array<
    RandomQuery & { ms: number; cpuMs: number; dbCpuMs: number; plan: string; countSource: string; total: number; lowerBound: boolean }
  > = [];
  for (let i = 0; i < n; i++) {
    const query = randomQuery(random, terms);
    const url = urlOf(query);
    const dbCpuBefore = databaseCpuTicks(databaseName);
    const started = performance.now();
    const { value: answer, cpuMs } = await withCpu(() => httpGet(agent, url, token));
    const ms = performance.now() - started;
    const dbCpuMs = databaseCpuSince(dbCpuBefore, databaseName);
    if (answer.status !== 200) throw new Error(`${url}: ${answer.status} ${answer.body.slice(0, 300)}`);
    const meta = (JSON.parse(answer.body) as { meta: { total: number; totalIsLowerBound?: boolean; totalIsEstimate?: boolean } }).meta;
    const again = (await outbox.running.services.mails.listMails({
      sort: query.sort,
      order: query.order,
      limit: LIMIT,
      statuses: query.statuses,
      q: query.q,
      receivedFrom: new URL(url).searchParams.get('receivedFrom') ?? undefined,
    })) as { plan?: string; countSource?: string };
    asked.push({
      ...query,
      ms,
      cpuMs,
      dbCpuMs,
      plan: again.plan ?? 'old',
      countSource: again.countSource ?? '',
      total: meta.total,
      lowerBound: meta.totalIsLowerBound ?? meta.totalIsEstimate ?? false,
    });
  }
  agent.destroy();
  const groups = new Map<string, typeof asked>([['all', asked]]);
  const add = (name: string, a: (typeof asked)[number]) => groups.set(name, [...(groups.get(name) ?? []), a]);
  for (const a of asked) add(a.plan, a);
  for (const a of asked) if (a.countSource) add(`count ${a.countSource}`, a);
  for (const a of asked) add(`q ${a.decade ?? '(none)'}`, a);
  const summaries = [...groups].map(([name, group]) => ({
    name,
    ...summarize(group.map((a) => a.ms)),
    cpuMs: round2(group.reduce((sum, a) => sum + a.cpuMs, 0) / group.length),
    dbCpuMs: round2(group.reduce((sum, a) => sum + a.dbCpuMs, 0) / group.length),
  }));
  console.log('');
  printTable(
    ['queries', 'n', 'p50', 'p99', 'max', 'CPU ms/query', 'PostgreSQL CPU ms/query', 'goal p99 ≤ 15, max ≤ 100'],
    summaries.map((s) => [
      s.name,
      s.count,
      s.p50,
      s.p99,
      s.max,
      s.cpuMs,
      databaseName === undefined ? '' : s.dbCpuMs,
      /^(q|count) /.test(s.name) ? '' : verdict(s.p99 <= 15 && s.max <= 100),
    ]),
  );
  const describe = (a: (typeof asked)[number]) =>
    `${a.ms.toFixed(1)} ms (CPU ${a.cpuMs.toFixed(1)}${a.dbCpuMs > 0 ? ` + PostgreSQL ${a.dbCpuMs}` : ''}) ${a.plan}${a.countSource ? `, count ${a.countSource}` : ''}: sort=${a.sort} ${a.order}${a.statuses ? ` status=${a.statuses.join(',')}` : ''}${a.q ? ` q=${a.q} (${a.decade})` : ''}${a.lastHours !== undefined ? ` last ${a.lastHours} h` : ''} → ${a.total}${a.lowerBound ? '+' : ''}`;
  console.log('\nslowest:');
  for (const a of [...asked].sort((x, y) => y.ms - x.ms).slice(0, 12)) console.log(`  ${describe(a)}`);
  console.log(
    `  load average after the run: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')} (before: ${setup.loadAverage.join(' / ')})`,
  );
  const file = writeResult('list-random', setup, { seed, queries: n, summaries, asked });
  console.log(`\nresult: ${file}`);
}

runMain(main);
