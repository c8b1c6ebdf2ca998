#!/usr/bin/env node
// `npm run bench`: every benchmark of bench/, one after the other, each in its own process; or only those
// named: `npm run bench -- delivery list`. Arguments after `--` go to each benchmark run:
// `npm run bench -- list -- --engine postgres --count 1000000`. Figures and setup are printed by each
// benchmark and written to bench/results/ (gitignored). See docs/benchmarks.md.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const BENCHMARKS = {
  delivery: 'bench/delivery.ts',
  'intake-http': 'bench/intake-http.ts',
  'intake-smtp': 'bench/intake-smtp.ts',
  'idle-latency': 'bench/idle-latency.ts',
  list: 'bench/list.ts',
  'delivery-processes': 'bench/delivery-processes.ts',
  live: 'bench/live.ts',
  bulk: 'bench/bulk.ts',
  webhooks: 'bench/webhooks.ts',
  bounces: 'bench/bounces.ts',
  'suppression-cost': 'bench/suppression-cost.ts',
  stats: 'bench/stats.ts',
  lanes: 'bench/lanes.ts',
  failover: 'bench/failover.ts',
  start: 'bench/start.ts',
  // Ten minutes per engine by default: only when named (`npm run bench -- soak`), never in the plain run.
  soak: 'bench/soak.ts',
};
const ON_REQUEST_ONLY = new Set(['soak']);

const argv = process.argv.slice(2);
const split = argv.indexOf('--');
const names = split === -1 ? argv : argv.slice(0, split);
const passThrough = split === -1 ? [] : argv.slice(split + 1);

const unknown = names.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0 || names.includes('help')) {
  console.error(
    `Unknown benchmark: ${unknown.join(', ')}\nUsage: npm run bench [-- ${Object.keys(BENCHMARKS).join('|')} ...] [-- benchmark options]`,
  );
  process.exit(2);
}
const selected = names.length > 0 ? names : Object.keys(BENCHMARKS).filter((name) => !ON_REQUEST_ONLY.has(name));

const [load1] = os.loadavg();
if (load1 > os.cpus().length * 0.5) {
  console.log(`⚠ load average ${load1.toFixed(2)} on ${os.cpus().length} CPUs: other work is running; the figures will be low and noisy.`);
}

const failed = [];
for (const name of selected) {
  console.log(`\n━━ bench: ${name} ━━`);
  const started = Date.now();
  const result = spawnSync(process.execPath, ['--import', 'tsx', BENCHMARKS[name], ...passThrough], { cwd: root, stdio: 'inherit' });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (result.status !== 0) {
    failed.push(name);
    console.log(`✘ ${name} failed (exit ${result.status ?? result.signal}, ${seconds}s)`);
  } else {
    console.log(`✔ ${name} (${seconds}s)`);
  }
}
console.log(
  failed.length > 0
    ? `\n${failed.length} benchmark(s) failed: ${failed.join(', ')}`
    : `\n${selected.length} benchmark(s) ran; results in bench/results/`,
);
process.exit(failed.length > 0 ? 1 : 0);
