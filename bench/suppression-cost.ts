/**
 * What the suppression check costs HTTP intake (the goal: at most 5 %). One real server (start(config) in
 * this process, WORKER=off), one list that changes between phases, and the phases alternated in rounds so that
 * every case sees the same minutes of a shared machine:
 *   empty   — no suppression at all (the check knows the list is empty and skips the lookup);
 *   listed  — 10,000 addresses listed, none of them a submitted recipient (every submission pays the lookup);
 *   hits    — the same 10,000 plus one in ten of the recipients about to be submitted (those mails go to Error).
 * Each phase runs single mails (`--connections` clients) and batches of `--batch-size`; the figure that counts
 * on a loaded machine is the server's CPU time per accepted mail (process.cpuUsage), printed beside mails/s.
 *
 *   npx tsx bench/suppression-cost.ts [--engine sqlite|postgres] [--rounds 3] [--seconds 6] [--listed 10000]
 *                                     [--connections 32] [--batch-connections 4] [--batch-size 500]
 */
import { upsertSuppressions, type NewSuppression } from '../server/src/suppression/suppression.repository.js';
import { suppressionCheckFor } from '../server/src/suppression/suppression-check.js';
import { formatNumber, printSetup, printTable, rate, runMain, withTimeout, writeResult } from './support/common.js';
import { runLoadInChild, type LoadSpec } from './support/http-load.js';
import { engineOption, parseBenchArgs, positiveNumberOption, wholeNumberOption } from './support/options.js';
import { startBenchOutbox } from './support/outbox.js';

const {
  engine,
  rounds,
  seconds,
  connections,
  'batch-connections': batchConnections,
  'batch-size': batchSize,
  listed,
} = parseBenchArgs({
  engine: engineOption(),
  rounds: wholeNumberOption(3),
  seconds: positiveNumberOption(6),
  connections: wholeNumberOption(32),
  'batch-connections': wholeNumberOption(4),
  'batch-size': wholeNumberOption(500),
  listed: wholeNumberOption(10_000, { min: 0 }),
});

type Case = 'empty' | 'listed' | 'hits';
const CASES: Case[] = ['empty', 'listed', 'hits'];
/** Recipients are customer<index>@example.com (support/mails.ts); a phase's indexes start here and never repeat. */
const PHASE_STRIDE = 10_000_000;
/** In the `hits` case one recipient in this many is listed beforehand. */
const HIT_EVERY = 10;

interface Sample {
  case: Case;
  body: 'single' | 'batch';
  mails: number;
  seconds: number;
  mailsPerSecond: number;
  cpuUsPerMail: number;
  suppressedRecipients: number;
}

async function main(): Promise<void> {
  const setup = printSetup('Suppression check: HTTP intake CPU per mail with an empty list, a long list, and a list that hits', {
    engine,
    rounds,
    seconds,
    connections,
    batchConnections,
    batchSize,
    listed,
    worker: 'off',
  });

  const outbox = await startBenchOutbox({ engine, label: 'suppression_cost', env: { WORKER: 'off' } });
  const db = outbox.running.store.db;
  const check = suppressionCheckFor(outbox.running.store);
  const entry = (address: string): NewSuppression => ({ address, reason: 'manual', createdBy: 'bench', at: Date.now() });
  const longList = Array.from({ length: listed }, (_, i) => entry(`listed-${i}@suppressed.example`));
  let hitAddresses: string[] = [];

  /** Puts the list into the state the case needs, telling the server's check as the API would. */
  async function prepare(which: Case, firstIndex: number, expectedMails: number): Promise<void> {
    if (hitAddresses.length > 0) await db.deleteFrom('suppressions').where('address', 'like', 'customer%@example.com').execute();
    hitAddresses = [];
    if (which === 'empty') {
      await db.deleteFrom('suppressions').execute();
      check.removed();
      return;
    }
    const { count } = await db
      .selectFrom('suppressions')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    if (Number(count) !== listed) await db.transaction().execute((trx) => upsertSuppressions(trx, longList));
    if (which === 'hits') {
      hitAddresses = Array.from(
        { length: Math.ceil(expectedMails / HIT_EVERY) },
        (_, i) => `customer${firstIndex + i * HIT_EVERY}@example.com`,
      );
      await db.transaction().execute((trx) => upsertSuppressions(trx, hitAddresses.map(entry)));
    }
    check.added();
  }

  const base: Omit<LoadSpec, 'body' | 'connections' | 'durationMs' | 'firstIndex'> = {
    url: `${outbox.baseUrl}/api/v1/mail`,
    headers: { authorization: `Token ${outbox.apiKey}` },
  };
  let phase = 1;
  async function measure(which: Case, body: 'single' | 'batch'): Promise<Sample> {
    const firstIndex = phase++ * PHASE_STRIDE;
    // Generous: more than either body kind reaches in a phase on this hardware.
    await prepare(which, firstIndex, body === 'single' ? 10_000 : 60_000);
    const cpuBefore = process.cpuUsage();
    const result = await withTimeout(
      runLoadInChild({
        ...base,
        firstIndex,
        durationMs: seconds * 1000,
        ...(body === 'single'
          ? { body: { kind: 'single' }, connections }
          : { body: { kind: 'batch', batchSize }, connections: batchConnections }),
      }),
      seconds * 1000 + 60_000,
      `${which} ${body}`,
    );
    const cpu = process.cpuUsage(cpuBefore);
    if (result.firstError) console.log(`  ${which} ${body}: first non-202 answer: ${result.firstError}`);
    const suppressed = hitAddresses.length
      ? await db
          .selectFrom('mail_recipients')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('kind', '=', 'envelope')
          .where('outcome', '=', 'suppressed')
          .executeTakeFirstOrThrow()
      : { n: 0 };
    return {
      case: which,
      body,
      mails: result.mails,
      seconds: result.elapsedMs / 1000,
      mailsPerSecond: rate(result.mails, result.elapsedMs),
      cpuUsPerMail: result.mails > 0 ? Math.round((cpu.user + cpu.system) / result.mails) : NaN,
      suppressedRecipients: Number(suppressed.n),
    };
  }

  try {
    // Warm-up (JIT, prepared statements, connections); not reported.
    await measure('empty', 'single');
    await measure('listed', 'batch');
    const samples: Sample[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const body of ['single', 'batch'] as const) {
        // The order turns each round so that no case always follows the same one.
        for (let k = 0; k < CASES.length; k++) samples.push(await measure(CASES[(k + round) % CASES.length]!, body));
      }
    }

    const rows: Array<Array<string | number>> = [];
    const medians = new Map<string, number>();
    for (const body of ['single', 'batch'] as const) {
      for (const which of CASES) {
        const mine = samples.filter((s) => s.case === which && s.body === body);
        const cpu = median(mine.map((s) => s.cpuUsPerMail));
        medians.set(`${which}/${body}`, cpu);
        const empty = medians.get(`empty/${body}`)!;
        rows.push([
          body === 'single' ? 'one mail per request' : `batches of ${batchSize}`,
          which,
          mine.map((s) => formatNumber(s.mailsPerSecond)).join(' / '),
          mine.map((s) => s.cpuUsPerMail).join(' / '),
          cpu,
          which === 'empty' ? '—' : `${(((cpu - empty) / empty) * 100).toFixed(1)} %`,
        ]);
      }
    }
    console.log('');
    printTable(['phase', 'list', 'mails/s per round', 'CPU µs/mail per round', 'median CPU µs/mail', 'vs empty'], rows);
    const hitRuns = samples.filter((s) => s.case === 'hits');
    console.log(`  suppressed recipients seen after the last 'hits' phase: ${hitRuns.at(-1)?.suppressedRecipients ?? 0} (cumulative)`);
    const file = writeResult('suppression-cost', setup, { samples, medians: Object.fromEntries(medians) });
    console.log(`\nresult: ${file}`);
  } finally {
    await outbox.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

runMain(main);
