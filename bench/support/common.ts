/**
 * What every benchmark shares: the setup line (machine, runtime, engine and the knobs of the run), latency
 * percentiles, a results file under bench/results/ (gitignored) and small helpers. A benchmark prints its
 * figures with the setup it ran on, so a number is never read without knowing where it came from.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const benchDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const resultsDir = path.join(benchDir, 'results');

export interface Setup {
  node: string;
  platform: string;
  cpuModel: string;
  cpuCount: number;
  memoryGb: number;
  /** os.loadavg() at the start: other work on the machine skews every figure. */
  loadAverage: number[];
  /** The commit measured, with `+dirty` when server/ or contract/ had uncommitted changes. */
  commit: string;
  engine: string;
  [knob: string]: unknown;
}

/** The machine and runtime, plus the run's own knobs (engine, counts, concurrency...). */
export function describeSetup(knobs: { engine: string } & Record<string, unknown>): Setup {
  const cpus = os.cpus();
  return {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cpuCount: cpus.length,
    memoryGb: Math.round(os.totalmem() / 1024 ** 3),
    loadAverage: os.loadavg().map((value) => Math.round(value * 100) / 100),
    commit: currentCommit(),
    ...knobs,
  };
}

function currentCommit(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: benchDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = git('status', '--porcelain', '--', '../server', '../contract') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? '+dirty' : ''}`;
  } catch {
    return 'unknown';
  }
}

/** Warns when the machine is already busy: the figures would measure the other work too. */
export function warnIfBusy(setup: Setup): void {
  const [load1] = setup.loadAverage;
  if (load1 !== undefined && load1 > setup.cpuCount * 0.5) {
    console.log(
      `⚠ load average ${load1} on ${setup.cpuCount} CPUs before the run: other processes are busy; figures will be low and noisy.`,
    );
  }
}

export function setupLine(setup: Setup): string {
  const { node, platform, cpuModel, cpuCount, memoryGb, loadAverage, commit, ...knobs } = setup;
  const extra = Object.entries(knobs)
    .map(([key, value]) => `${key}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`)
    .join(' ');
  return `setup: node ${node}, ${cpuCount}× ${cpuModel}, ${memoryGb} GB, ${platform}, load ${loadAverage.join('/')}, commit ${commit}; ${extra}`;
}

/**
 * Before a run: what it measures (`title`), the setup line and, on a busy machine, the warning. Returns the setup,
 * for the results file.
 */
export function printSetup(title: string | undefined, knobs: { engine: string } & Record<string, unknown>): Setup {
  const setup = describeSetup(knobs);
  if (title !== undefined) console.log(title);
  console.log(setupLine(setup));
  warnIfBusy(setup);
  return setup;
}

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles in milliseconds, rounded to 0.01 ms. */
export function summarize(samples: number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  const round = (value: number) => Math.round(value * 100) / 100;
  const mean = sorted.length === 0 ? NaN : sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return {
    count: sorted.length,
    mean: round(mean),
    p50: round(at(50)),
    p95: round(at(95)),
    p99: round(at(99)),
    max: round(sorted.at(-1) ?? NaN),
  };
}

/** Writes `bench/results/<name>-<engine>-<time>.json` and `<name>-<engine>-latest.json`; returns the first path. */
export function writeResult(name: string, setup: Setup, figures: Record<string, unknown>): string {
  fs.mkdirSync(resultsDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const body = `${JSON.stringify({ benchmark: name, at: new Date().toISOString(), setup, ...figures }, null, 2)}\n`;
  const file = path.join(resultsDir, `${name}-${setup.engine}-${stamp}.json`);
  fs.writeFileSync(file, body);
  fs.writeFileSync(path.join(resultsDir, `${name}-${setup.engine}-latest.json`), body);
  return file;
}

export function makeTempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function rate(count: number, ms: number): number {
  return ms > 0 ? Math.round((count / ms) * 1000) : 0;
}

export function formatNumber(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : String(value);
}

export function verdict(met: boolean): string {
  return met ? 'met' : 'NOT met';
}

/** Prints rows as an aligned plain-text table. */
export function printTable(header: string[], rows: Array<Array<string | number>>): void {
  const cells = [header, ...rows.map((row) => row.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  console.log(line(cells[0]!));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells.slice(1)) console.log(line(row));
}

/** Runs a benchmark's main function: a failure prints its error and ends the process with status 1 at once. */
export function runMain(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}

/** Rejects when `promise` takes longer than `ms`: every benchmark is bounded in time. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${Math.round(ms / 1000)} s`)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** CPU time of a process in ms: this one through process.cpuUsage, another through /proc (Linux; undefined elsewhere). */
export function cpuTimeMs(pid?: number): number | undefined {
  if (pid === undefined) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100 Hz on Linux)
    return ticks * 10;
  } catch {
    return undefined;
  }
}

/** Share of one core a process used between two cpuTimeMs readings over `wallMs`, in percent. */
export function cpuPercent(before: number | undefined, after: number | undefined, wallMs: number): number | undefined {
  return before === undefined || after === undefined || wallMs <= 0 ? undefined : Math.round(((after - before) / wallMs) * 100);
}

/** A GET with an operator's or API key's token, over `agent` (keep-alive): its status and body. */
export function httpGet(agent: http.Agent, url: string, token: string): Promise<{ status: number; body: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        headers: { authorization: `Token ${token}` },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end();
  });
}
