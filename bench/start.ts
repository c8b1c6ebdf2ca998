/**
 * Server start-up: wall time and CPU from `node server/dist/main.js` (the product's build: run `npm run build`
 * first) to the first 200 from /healthz, on a store that is already migrated (a first start also migrates).
 * Every process of the test suite and every operator's restart pays it. Each of `--rounds` starts is measured
 * in the started process itself (/proc: its CPU when it first answers), then stopped with SIGTERM.
 *
 *   npx tsx bench/start.ts [--rounds 10] [--entry server/dist/main.js]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, waitUntil } from '../server/test/support/net.js';
import { benchDir, cpuTimeMs, makeTempDir, printSetup, printTable, removeDir, summarize, writeResult } from './support/common.js';
import { parseBenchArgs, textOption, wholeNumberOption } from './support/options.js';

const { rounds, entry: entryPath } = parseBenchArgs({ rounds: wholeNumberOption(10), entry: textOption('server/dist/main.js') });
const entry = path.resolve(benchDir, '..', entryPath);
if (!fs.existsSync(entry)) throw new Error(`${entryPath} does not exist: run \`npm run build\` first`);

const setup = printSetup('Server start: process spawned → /healthz answers 200 (migrated store, worker and SMTP off)', {
  engine: 'sqlite',
  rounds,
  entry: entryPath,
});

/** Starts the server once; resolves with its wall time and CPU (ms) to the first 200 from /healthz. */
async function startOnce(dataDir: string): Promise<{ wallMs: number; cpuMs: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [entry], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      SMTP_PORT: 'off',
      WORKER: 'off',
      LOG_LEVEL: 'error',
      OUTBOX_ADMIN_USER: 'ops',
      OUTBOX_ADMIN_PASSWORD: 'correct horse battery',
    },
    stdio: 'ignore',
  });
  try {
    await waitUntil(
      () =>
        fetch(`http://127.0.0.1:${port}/healthz`).then(
          (response) => response.ok,
          () => false,
        ),
      { timeoutMs: 60_000, intervalMs: 10, what: 'the server to answer /healthz' },
    );
    const wallMs = performance.now() - started;
    const cpuMs = cpuTimeMs(child.pid);
    if (cpuMs === undefined) throw new Error('no /proc on this machine: the start-up CPU cannot be read');
    return { wallMs, cpuMs };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

const dataDir = makeTempDir('outbox-bench-start-');
try {
  await startOnce(dataDir); // the first start creates and migrates the store; not counted
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const { wallMs, cpuMs } = await startOnce(dataDir);
    wall.push(wallMs);
    cpu.push(cpuMs);
  }
  const w = summarize(wall);
  const c = summarize(cpu);
  printTable(
    ['figure', 'p50 ms', 'mean ms', 'max ms'],
    [
      ['wall: spawn → /healthz 200', w.p50.toFixed(0), w.mean.toFixed(0), w.max.toFixed(0)],
      ['CPU of the server process', c.p50.toFixed(0), c.mean.toFixed(0), c.max.toFixed(0)],
    ],
  );
  console.log(`\nresult: ${writeResult('start', setup, { wallMs: w, cpuMs: c })}`);
} finally {
  removeDir(dataDir);
}
