/**
 * A bulk filter action on a large store while mail is submitted and delivered:
 * how long `POST /api/v1/mail/bulk` with a filter takes on N mails (100,000 by default), and whether delivery
 * stalls meanwhile. Goal: no delivery stall over 1 s.
 *
 *   npx tsx bench/bulk.ts [--count 100000] [--rate 100] [--engine auto|sqlite|postgres|all] [--action delete|dequeue]
 *
 * The store is filled with N demo mails (all six statuses, `insertDemoMails`), then the real server starts on it
 * with its worker on and a discarding SMTP sink in another process that notes when each mail arrives. A
 * submitter posts `--rate` mails a second over HTTP, each with its own envelope sender, for 3 s before the bulk
 * action, during it and 3 s after. The bulk action is the filter form over every mail (filter `{}`, expectedCount
 * = N plus what was submitted so far): `delete` deletes what may be deleted and skips Queued and Processing.
 *
 * Figures: the bulk call's duration and outcome; for the mails submitted while it ran, submit → arrival latency
 * (p50, p99, max); and the longest gap between two arrivals during the call (a stall), next to the same gap
 * before it. A submitter at 100/s puts a mail in every 10 ms, so a gap near that is flow, a gap of seconds is a stall.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import { insertDemoMails } from '../server/src/demo/demo-data.js';
import { openStore } from '../server/src/store/connection.js';
import { startArrivalSink } from './support/arrival-sink.js';
import { preciseNow } from './support/discarding-sink.js';
import { formatNumber, printSetup, printTable, sleep, summarize, verdict, writeResult } from './support/common.js';
import { benchMail } from './support/mails.js';
import { operatorToken, startBenchOutbox, type Engine } from './support/outbox.js';
import { choiceOption, enginesOption, parseBenchArgs, positiveNumberOption, resolveEngines, wholeNumberOption } from './support/options.js';
import { createScratchPlace } from './support/scratch-store.js';

const STALL_GOAL_MS = 1000;
const AROUND_MS = 3000;

const {
  count,
  rate: submitRate,
  engine: engineChoice,
  action,
} = parseBenchArgs({
  count: wholeNumberOption(100_000),
  rate: positiveNumberOption(100),
  engine: enginesOption('auto', ['auto', 'sqlite', 'postgres', 'all']),
  action: choiceOption('delete', ['delete', 'dequeue']),
});

/** POST with no time limit: fetch gives up on headers after 300 s, and a large filter action may take longer. */
function postJson(url: string, token: string, body: unknown): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Token ${token}` } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

/** The longest gap between consecutive instants of `times` (sorted) inside [from, to]. */
function longestGap(times: number[], from: number, to: number): number {
  const inside = times.filter((t) => t >= from && t <= to);
  let longest = inside.length > 0 ? inside[0]! - from : to - from;
  for (let i = 1; i < inside.length; i++) longest = Math.max(longest, inside[i]! - inside[i - 1]!);
  if (inside.length > 0) longest = Math.max(longest, to - inside.at(-1)!);
  return Math.round(longest);
}

async function runEngine(engine: Engine) {
  const place = await createScratchPlace(engine, 'bulk');
  const { dataDir, databaseUrl } = place;
  const store = await openStore({ dataDir, databaseUrl });
  const fillStarted = performance.now();
  await insertDemoMails(store, { count, now: Date.now(), batchSize: 5000 });
  const statusCounts = Object.fromEntries(await getStatusCounts(store.db));
  await store.close();
  console.log(`${engine}: ${formatNumber(count)} demo mails in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s`, statusCounts);

  const sink = await startArrivalSink();
  const outbox = await startBenchOutbox({
    engine,
    dataDir,
    ...(databaseUrl ? { databaseUrl } : {}),
    env: { WORKER: 'on', RELAY_URL: sink.url, RELAY_TLS: 'off' },
    label: 'bulk',
  });
  const token = await operatorToken(outbox);
  const submittedAt = new Map<string, number>();
  let submitting = true;
  let submitErrors = 0;
  let sequence = 0;
  const submitter = (async () => {
    const gapMs = 1000 / submitRate;
    let next = performance.now();
    const inFlight = new Set<Promise<void>>();
    while (submitting) {
      const sender = `bulk-bench-${sequence++}@example.com`;
      const at = preciseNow();
      const call = fetch(`${outbox.baseUrl}/api/v1/mail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Token ${outbox.apiKey}` },
        body: JSON.stringify(benchMail(sequence, { fromMail: sender })),
      })
        .then(async (response) => {
          await response.arrayBuffer();
          if (response.status === 202) submittedAt.set(sender, at);
          else submitErrors++;
        })
        .catch(() => {
          submitErrors++;
        });
      inFlight.add(call);
      void call.finally(() => inFlight.delete(call));
      next += gapMs;
      await sleep(Math.max(0, next - performance.now()));
    }
    await Promise.all(inFlight);
  })();

  try {
    await sleep(AROUND_MS);
    const before = await fetch(`${outbox.baseUrl}/api/v1/mail/list?limit=1`, { headers: { authorization: `Token ${token}` } });
    const expectedCount = ((await before.json()) as { meta: { total: number } }).meta.total;
    const bulkStart = preciseNow();
    const response = await postJson(`${outbox.baseUrl}/api/v1/mail/bulk`, token, { action, filter: {}, expectedCount });
    const bulkEnd = preciseNow();
    const body = response.body as { data?: Array<{ done: number; skipped: Array<{ reason: string; count: number }> }> };
    if (response.status !== 200 || !body.data?.[0]) throw new Error(`bulk answered ${response.status}: ${JSON.stringify(body)}`);
    const result = body.data[0];
    await sleep(AROUND_MS);
    submitting = false;
    await submitter;
    // Let the last submissions arrive.
    await sleep(1500);

    const arrivals = new Map(await sink.arrivals());
    const arrivalTimes = [...arrivals.values()].sort((a, b) => a - b);
    const duringLatencies: number[] = [];
    let lost = 0;
    for (const [sender, at] of submittedAt) {
      const arrived = arrivals.get(sender);
      if (arrived === undefined) lost++;
      else if (at >= bulkStart && at <= bulkEnd) duringLatencies.push(arrived - at);
    }
    const skipped = result.skipped.reduce((sum, s) => sum + s.count, 0);
    return {
      engine,
      expectedCount,
      bulkMs: Math.round(bulkEnd - bulkStart),
      done: result.done,
      skipped,
      skippedBy: Object.fromEntries(result.skipped.map((s) => [s.reason, s.count])),
      submitted: submittedAt.size,
      submitErrors,
      notArrived: lost,
      latencyDuring: summarize(duringLatencies),
      longestGapBeforeMs: longestGap(arrivalTimes, bulkStart - AROUND_MS, bulkStart),
      longestGapDuringMs: longestGap(arrivalTimes, bulkStart, bulkEnd),
    };
  } finally {
    submitting = false;
    await submitter.catch(() => undefined);
    await outbox.close();
    await sink.stop();
    await place.remove();
  }
}

async function main() {
  const engines = await resolveEngines(engineChoice, { withoutPostgres: 'fail' });
  const setup = printSetup(undefined, { engine: engines.join('+'), count, submitRate, action, filter: '{}' });
  const results = [];
  for (const engine of engines) results.push(await runEngine(engine));
  printTable(
    [
      'engine',
      'mails',
      'bulk ms',
      'moved',
      'skipped',
      'submitted',
      'lost',
      'latency p50/p99/max ms (during)',
      'longest gap before/during ms',
      `stall < ${STALL_GOAL_MS} ms`,
    ],
    results.map((r) => [
      r.engine,
      formatNumber(r.expectedCount),
      formatNumber(r.bulkMs),
      formatNumber(r.done),
      formatNumber(r.skipped),
      formatNumber(r.submitted),
      r.notArrived,
      `${r.latencyDuring.p50}/${r.latencyDuring.p99}/${r.latencyDuring.max}`,
      `${r.longestGapBeforeMs}/${r.longestGapDuringMs}`,
      verdict(r.longestGapDuringMs < STALL_GOAL_MS && r.latencyDuring.max < STALL_GOAL_MS),
    ]),
  );
  for (const r of results) {
    if (r.done + r.skipped !== r.expectedCount && r.done + r.skipped < count)
      console.log(`⚠ ${r.engine}: moved + skipped = ${r.done + r.skipped}, expected at least ${count}`);
  }
  console.log(`results: ${writeResult('bulk', setup, { results })}`);
}

await main();
