/**
 * Failover at the issue's scale (docs/relays.md#how-failover-is-proven): the proof of
 * server/test/relays/relay-failover-peers.test.ts with a flood of `--flood` mails (5,000 by default) instead of the
 * test's 500. Two Postfix smtp-sinks are the relays `primary` and `fallback` of one route, Outbox runs in the test's
 * process (SQLite), the flood is submitted in HTTP batches of 500, and the primary is SIGKILLed once it has taken a
 * fifth of it; every assertion of the test holds here too (every mail ProviderSent, each Message-ID once across both
 * peers' dumps, no retry budget spent by a failover, the primary `down` within 5 s, relay_down firing, then up,
 * resolved, its mails back on it).
 *
 *   npx tsx bench/failover.ts [--flood 5000]
 *
 * One scenario, one home: this runs that test file through vitest with OUTBOX_FAILOVER_FLOOD set and reads the line of
 * figures it prints. Figures: submission time, time until every mail is ProviderSent, the CPU of the test's process
 * (server, worker and the test's own reads) over that time, mails the primary took before the kill, how long the health
 * took to say `down`, mails through each peer, those moved to the fallback within their attempt, those retried on
 * their backoff (their message had reached the primary when it died), mails that arrived twice (must be 0), and how
 * long after the restart the first mail reached the primary again (the probe's backoff: 1 s doubling while it is down).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { benchDir, formatNumber, printSetup, printTable, verdict, writeResult } from './support/common.js';
import { parseBenchArgs, wholeNumberOption } from './support/options.js';

const { flood } = parseBenchArgs({ flood: wholeNumberOption(5000, { min: 100 }) });

const setup = printSetup(undefined, { engine: 'sqlite', flood, relays: 'two smtp-sink processes', batch: 500 });

const serverDir = path.join(benchDir, '..', 'server');
const run = spawnSync('npx', ['vitest', 'run', 'test/relays/relay-failover-peers.test.ts'], {
  cwd: serverDir,
  env: { ...process.env, OUTBOX_TEST_ENGINE: 'sqlite', OUTBOX_FAILOVER_FLOOD: String(flood) },
  encoding: 'utf8',
  timeout: 20 * 60_000,
});
const output = `${run.stdout}${run.stderr}`;
const line = /failover proof figures: (\{.*\})/.exec(output)?.[1];
if (run.status !== 0 || !line) {
  console.log(output);
  throw new Error(`The failover proof failed at ${flood} mails (exit ${run.status}): its output is above`);
}
const figures = JSON.parse(line) as Record<string, number>;
const f = (name: string) => formatNumber(figures[name] ?? Number.NaN);

printTable(
  ['figure', 'value'],
  [
    ['mails submitted (HTTP batches of 500), ms', f('submittedMs')],
    ['every mail ProviderSent after, ms', f('allSentMs')],
    ['CPU of the process over that time, ms', f('cpuMs')],
    ['taken by the primary before the kill', f('takenBeforeKill')],
    ['primary down in GET /api/v1/relays/health after, ms', f('downAfterMs')],
    ['through the primary / the fallback', `${f('viaPrimary')} / ${f('viaFallback')}`],
    ['moved to the fallback within their attempt', f('failedOverInAttempt')],
    ['retried on their backoff (message handed over at the kill)', f('retriedOnBackoff')],
    ['arrived twice', f('sentTwice')],
    ['first mail back on the restarted primary after, ms', f('trafficBackMs')],
  ],
);
console.log(`\ndown within 5 s: ${verdict((figures.downAfterMs ?? Infinity) < 5_000)}; none twice: ${verdict(figures.sentTwice === 0)}`);
console.log(`result: ${writeResult('failover', setup, figures)}`);
