/**
 * The server's own cost of intake, without a load generator beside it: `start(config)` in this
 * process (WORKER=off), requests through `app.inject`, so every CPU µs counted is the server's. Each round
 * submits 32 single mails at once (one group commit's worth, as 32 connections make) twice, then a batch of
 * `--batch-size` with the full 202 and one with the short 202 (`Prefer: return=minimal`), in alternating
 * order. Prints mails/s and process CPU µs per mail for each. On a busy machine the CPU figure is the one to
 * compare; run two checkouts alternately (docs/benchmarks.md#reading-the-figures).
 *
 *   npx tsx bench/intake-inject.ts [--engine sqlite|postgres] [--rounds 10] [--batch-size 500]
 */
import { loadavg } from 'node:os';
import { benchMail } from './support/mails.js';
import { engineOption, parseBenchArgs, wholeNumberOption } from './support/options.js';
import { startBenchOutbox } from './support/outbox.js';

const {
  engine,
  rounds,
  'batch-size': batchSize,
} = parseBenchArgs({ engine: engineOption(), rounds: wholeNumberOption(10), 'batch-size': wholeNumberOption(500) });

const outbox = await startBenchOutbox({ engine, label: 'intake_inject', env: { WORKER: 'off' } });
try {
  const cpuMicros = () => {
    const usage = process.cpuUsage();
    return usage.user + usage.system;
  };
  let index = 0;
  const post = async (payload: object, prefer?: string) => {
    const response = await outbox.running.app.inject({
      method: 'POST',
      url: '/api/v1/mail',
      headers: { authorization: `Token ${outbox.apiKey}`, ...(prefer ? { prefer } : {}) },
      payload,
    });
    if (response.statusCode !== 202) throw new Error(`${response.statusCode} ${response.body}`);
  };
  const singles = () => Promise.all(Array.from({ length: 32 }, () => post(benchMail(index++))));
  const batch = (prefer?: string) =>
    post(
      Array.from({ length: batchSize }, () => benchMail(index++)),
      prefer,
    );

  const totals = new Map<string, { cpu: number; wallMs: number; mails: number }>();
  const measure = async (name: string, mails: number, run: () => Promise<unknown>) => {
    const cpuBefore = cpuMicros();
    const started = performance.now();
    await run();
    const total = totals.get(name) ?? { cpu: 0, wallMs: 0, mails: 0 };
    total.cpu += cpuMicros() - cpuBefore;
    total.wallMs += performance.now() - started;
    total.mails += mails;
    totals.set(name, total);
  };
  // Warm-up (JIT, prepared statements, connections); not counted.
  for (let i = 0; i < 2; i++) await Promise.all([singles(), batch(), batch('return=minimal')]);
  for (let round = 0; round < rounds; round++) {
    await measure('one mail per request ×32', 32, singles);
    await measure('one mail per request ×32', 32, singles);
    const full = () => measure(`batch of ${batchSize}, full 202`, batchSize, () => batch());
    const short = () => measure(`batch of ${batchSize}, short 202`, batchSize, () => batch('return=minimal'));
    if (round % 2 === 0) await full().then(short);
    else await short().then(full);
  }
  console.log(`intake through inject, engine=${engine}, load ${loadavg()[0]!.toFixed(1)}`);
  for (const [name, total] of totals)
    console.log(
      `  ${name}: ${Math.round((total.mails * 1000) / total.wallMs)} mails/s, ${Math.round(total.cpu / total.mails)} CPU µs/mail (${total.mails} mails)`,
    );
} finally {
  await outbox.close();
}
