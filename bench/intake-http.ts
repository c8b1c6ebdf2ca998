/**
 * HTTP intake: accepted mails per second through `POST /api/v1/mail` on the real server
 * (start(config) in this process, WORKER=off so only intake is measured, SMTP listener off), driven by a
 * keep-alive load generator in a child process.
 *   (a) one mail per request, `--connections` concurrent clients: goal ≥ 2,000 mails/s, durable (every 202 is
 *       a committed transaction; SQLite runs WAL with synchronous=FULL), p50/p99 latency, every non-202 counted;
 *   (b) batches of `--batch-size` (500) per request: goal ≥ 20,000 mails/s, with the full 202 (every mail) and
 *       with the short one (`Prefer: return=minimal`: id and status per mail, docs/api.md).
 * Afterwards the Queued counter must equal the mails that got a 202.
 *
 *   npx tsx bench/intake-http.ts [--engine sqlite|postgres] [--connections 32] [--seconds 10]
 *                                [--batch-connections 4] [--batch-seconds 10] [--batch-size 500]
 *                                [--suppressions N]  (N addresses on the suppression list: the check's cost)
 *                                [--profile]  (a CPU profile of the server's thread per phase, bench/results/profiles/)
 */
import path from 'node:path';
import { MailStatus } from '@outbox/contract';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import {
  cpuPercent,
  cpuTimeMs,
  formatNumber,
  type LatencySummary,
  printSetup,
  printTable,
  rate,
  resultsDir,
  runMain,
  summarize,
  verdict,
  withTimeout,
  writeResult,
} from './support/common.js';
import { runLoadInChild, type LoadResult, type LoadSpec } from './support/http-load.js';
import { startCpuProfile } from './support/cpu-profile.js';
import { engineOption, flagOption, parseBenchArgs, positiveNumberOption, wholeNumberOption } from './support/options.js';
import { startBenchOutbox } from './support/outbox.js';
import { upsertSuppressions } from '../server/src/suppression/suppression.repository.js';

const GOAL_SINGLE = 2_000;
const GOAL_BATCH = 20_000;

const {
  engine,
  connections,
  seconds,
  'batch-connections': batchConnections,
  'batch-seconds': batchSeconds,
  'batch-size': batchSize,
  suppressions,
  profile: isProfiling,
} = parseBenchArgs({
  engine: engineOption(),
  connections: wholeNumberOption(32),
  seconds: positiveNumberOption(10),
  'batch-connections': wholeNumberOption(4),
  'batch-seconds': positiveNumberOption(10),
  'batch-size': wholeNumberOption(500),
  suppressions: wholeNumberOption(0, { min: 0 }),
  profile: flagOption(),
});

interface Phase {
  name: string;
  goal: number;
  result: LoadResult;
  latency: LatencySummary;
  mailsPerSecond: number;
  serverCpuPercent: number | undefined;
  /** CPU time of the server process (all its threads) per accepted mail, in µs: steadier than mails/s on a busy machine. */
  serverCpuUsPerMail: number | undefined;
}

async function main(): Promise<void> {
  const setup = printSetup('HTTP intake: POST /api/v1/mail, accepted (202) mails per second', {
    engine,
    connections,
    seconds,
    batchConnections,
    batchSeconds,
    batchSize,
    worker: 'off',
    server: 'start(config) in this process',
    client: 'node:http keep-alive in a child process',
  });

  const outbox = await startBenchOutbox({ engine, label: 'intake_http', env: { WORKER: 'off' } });
  try {
    // None of the load's recipients is listed: every submission pays the lookup, none is suppressed.
    for (let i = 0; i < suppressions; i += 1000) {
      const entries = Array.from({ length: Math.min(1000, suppressions - i) }, (_, j) => ({
        address: `listed-${i + j}@suppressed.example`,
        reason: 'manual' as const,
        createdBy: 'bench',
        at: Date.now(),
      }));
      await outbox.running.store.db.transaction().execute((trx) => upsertSuppressions(trx, entries));
    }
    const base: Omit<LoadSpec, 'body' | 'connections' | 'durationMs' | 'firstIndex'> = {
      url: `${outbox.baseUrl}/api/v1/mail`,
      headers: { authorization: `Token ${outbox.apiKey}` },
    };
    let firstIndex = 0;
    const run = async (
      name: string,
      goal: number,
      spec: Pick<LoadSpec, 'body' | 'connections' | 'durationMs'> & { extraHeaders?: Record<string, string> },
    ): Promise<Phase> => {
      const stopProfile = isProfiling ? await startCpuProfile() : undefined;
      const cpuBefore = cpuTimeMs();
      const { extraHeaders, ...load } = spec;
      const headers = { ...base.headers, ...extraHeaders };
      const result = await withTimeout(runLoadInChild({ ...base, ...load, headers, firstIndex }), spec.durationMs + 60_000, name);
      const cpuAfter = cpuTimeMs();
      if (stopProfile) {
        const profile = await stopProfile();
        const file = profile.file(
          `intake-http-${engine}-${name.replace(/\W+/g, '-')}-${new Date().toISOString().replace(/[:.]/g, '-')}`,
          path.join(resultsDir, 'profiles'),
        );
        console.log(`CPU profile of the server's thread, ${name}, ${engine}: ${file}\n${profile.summary}\n`);
      }
      firstIndex += 10_000_000;
      const phase: Phase = {
        name,
        goal,
        result,
        latency: summarize(result.latenciesMs),
        mailsPerSecond: rate(result.mails, result.elapsedMs),
        serverCpuPercent: cpuPercent(cpuBefore, cpuAfter, result.elapsedMs),
        serverCpuUsPerMail:
          cpuBefore !== undefined && cpuAfter !== undefined && result.mails > 0
            ? Math.round(((cpuAfter - cpuBefore) * 1000) / result.mails)
            : undefined,
      };
      if (result.firstError) console.log(`  ${name}: first non-202 answer: ${result.firstError}`);
      return phase;
    };

    // Warm-up (JIT, prepared statements, connections); not reported.
    await run('warm-up', 0, { body: { kind: 'single' }, connections, durationMs: 2_000 });
    const single = await run('one mail per request', GOAL_SINGLE, { body: { kind: 'single' }, connections, durationMs: seconds * 1000 });
    const batchSpec = { body: { kind: 'batch', batchSize } as const, connections: batchConnections, durationMs: batchSeconds * 1000 };
    const batch = await run(`batches of ${batchSize}`, GOAL_BATCH, batchSpec);
    const shortBatch = await run(`batches of ${batchSize}, short 202`, GOAL_BATCH, {
      ...batchSpec,
      extraHeaders: { prefer: 'return=minimal' },
    });
    const phases = [single, batch, shortBatch];

    const counts = await getStatusCounts(outbox.running.store.db);
    const queued = counts.get(MailStatus.Queued) ?? 0;
    const warmMails = queued - phases.reduce((sum, p) => sum + p.result.mails, 0);

    console.log('');
    printTable(
      [
        'phase',
        'conns',
        'requests',
        'non-202',
        'mails',
        'mails/s',
        'p50 ms',
        'p99 ms',
        'server CPU',
        'CPU µs/mail',
        'goal mails/s',
        'goal',
      ],
      phases.map((p) => {
        const non202 = p.result.requests - (p.result.statuses['202'] ?? 0);
        return [
          p.name,
          p === single ? connections : batchConnections,
          p.result.requests,
          non202,
          p.result.mails,
          formatNumber(p.mailsPerSecond),
          p.latency.p50,
          p.latency.p99,
          `${p.serverCpuPercent ?? '?'}%`,
          p.serverCpuUsPerMail ?? '?',
          `≥ ${formatNumber(p.goal)}`,
          verdict(p.mailsPerSecond >= p.goal && non202 === 0),
        ];
      }),
    );
    console.log(
      `  Queued counter after the run: ${queued} (${warmMails >= 0 ? `${warmMails} from the warm-up` : 'FEWER than the 202s!'}); statuses: ${phases.map((p) => `${p.name} ${JSON.stringify(p.result.statuses)}`).join(', ')}`,
    );

    const file = writeResult('intake-http', setup, {
      goals: { singleMailsPerSecond: GOAL_SINGLE, batchMailsPerSecond: GOAL_BATCH },
      phases: phases.map((p) => ({
        name: p.name,
        requests: p.result.requests,
        mails: p.result.mails,
        seconds: p.result.elapsedMs / 1000,
        statuses: p.result.statuses,
        mailsPerSecond: p.mailsPerSecond,
        requestsPerSecond: rate(p.result.requests, p.result.elapsedMs),
        latencyMs: p.latency,
        serverCpuPercent: p.serverCpuPercent,
        serverCpuUsPerMail: p.serverCpuUsPerMail,
        goal: p.goal,
        met: p.mailsPerSecond >= p.goal && p.result.requests === (p.result.statuses['202'] ?? 0),
      })),
      queuedAfter: queued,
    });
    console.log(`\nresult: ${file}`);
  } finally {
    await outbox.close();
  }
}

runMain(main);
