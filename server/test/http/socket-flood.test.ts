/**
 * 500 slow or non-reading clients against one real listening server, on the engine under
 * test: idle sockets, bodies sent a byte a second with and without a token, event streams that never read. The
 * server (socket-flood/server.ts) and the clients (socket-flood/clients.ts) are processes of their own, so the
 * server's descriptors and memory are read from /proc and the operator's requests from this process are not
 * slowed by the clients' own work. Each is started by a shell that raises its open-file limit to the hard limit;
 * where that is below what the sockets need, the count is lowered to fit and the test says so.
 *
 * 500 clients (125 of each kind) show what 2,000 did: every kind closed by the server's own timeouts, the
 * operator answered meanwhile, descriptors and memory bounded. The clients' trickling and reconnecting costs CPU
 * in proportion to their count (2,000 took 15.8 CPU-seconds of a full run); `OUTBOX_FLOOD_CLIENTS=2000` runs
 * the figure docs/operations.md quotes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, makeTempDir, PASSWORD, testEngine } from '../support/context.js';
import { bundleForNode } from '../support/global-setup.js';
import { waitUntil } from '../support/net.js';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WANTED = Number(process.env.OUTBOX_FLOOD_CLIENTS) || 500;
/** Descriptors a server needs besides the clients' sockets (store, listener, stdio, the operator's requests). */
const HEADROOM = 512;

const children: ChildProcess[] = [];

/**
 * server.ts and clients.ts bundled with esbuild once for the file, as the globalSetup bundles the server: a
 * process started through `--import tsx` compiled every source it imports on the way in (about 2 CPU-seconds
 * per start here, and half a minute at load 25).
 */
const bundleDir = path.join(serverDir, '.tmp', `socket-flood-${process.pid}`);
const bundled = bundleForNode({ server: 'test/http/socket-flood/server.ts', clients: 'test/http/socket-flood/clients.ts' }, bundleDir);
afterAll(() => fs.rmSync(bundleDir, { recursive: true, force: true }));

/** The bundle of `script` ('server' or 'clients') under a shell that first raises the soft open-file limit to `files`. */
async function spawnScript(
  script: 'server' | 'clients',
  files: number,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; lines: AsyncIterator<string> }> {
  await bundled;
  const child = spawn('sh', ['-c', `ulimit -n ${files} && exec "$0" "$1"`, process.execPath, path.join(bundleDir, `${script}.js`)], {
    cwd: serverDir,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return { child, lines };
}

async function nextJson<T>(lines: AsyncIterator<string>, what: string): Promise<T> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no ${what} within 90 s`)), 90_000).unref());
  for (;;) {
    const line = await Promise.race([lines.next(), timeout]);
    if (line.done) throw new Error(`the process ended before ${what}`);
    if (line.value.startsWith('{')) return JSON.parse(line.value) as T;
  }
}

const descriptorsOf = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
const killAll = () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};
afterAll(killAll);
const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * share) - 1]!;
const p99 = (values: number[]) => percentile(values, 0.99);

interface Report {
  open: Record<string, number>;
  closed: Record<string, number>;
}

describe(`${WANTED} slow or non-reading clients (${testEngine})`, () => {
  it('leave the server answering the operator (a list p90 in well under a second), with bounded descriptors and memory, and every socket released after', async () => {
    const hardLimit = Number(execFileSync('sh', ['-c', 'ulimit -Hn']).toString().trim()) || 1024;
    const files = Math.min(hardLimit, WANTED + 2 * HEADROOM);
    const count = Math.min(WANTED, files - HEADROOM);
    if (count < WANTED) console.log(`open-file hard limit ${hardLimit}: ${count} clients instead of ${WANTED}`);

    const dataDir = makeTempDir('outbox-flood-');
    const database = testEngine === 'postgres' ? await createTestDatabase() : undefined;
    // Cleared in `finally`: files share a worker process (isolate: false), so a sampler left running after a
    // failure would read the /proc of a dead server in every file that runs after this one.
    let sampler: NodeJS.Timeout | undefined;
    try {
      const server = await spawnScript('server', files, {
        DATA_DIR: dataDir,
        ...(database ? { DATABASE_URL: database.url } : {}),
        FLOOD_PASSWORD: PASSWORD,
        FLOOD_HEADERS_TIMEOUT_MS: '3000',
        FLOOD_REQUEST_TIMEOUT_MS: '5000',
      });
      const { port } = await nextJson<{ port: number }>(server.lines, 'the server port');
      const pid = server.child.pid!;
      const base = `http://127.0.0.1:${port}`;

      const login = async () => {
        const answer = await fetch(`${base}/api/v1/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'ops', password: PASSWORD }),
        });
        expect(answer.status).toBe(200);
        return ((await answer.json()) as { data: Array<{ token: string }> }).data[0]!.token;
      };
      const operator = await login();
      // Eight streams per token are kept: enough tokens that every stream the clients open is held.
      // One after another: attempts count against the address's limit while they run.
      const tokens: string[] = [];
      while (tokens.length < Math.ceil(count / 4 / 8) + 1) tokens.push(await login());
      const listOnce = async () => {
        const started = performance.now();
        const answer = await fetch(`${base}/api/v1/mail/list?limit=50`, { headers: { authorization: `Token ${operator}` } });
        expect(answer.status).toBe(200);
        expect(((await answer.json()) as { data: unknown[] }).data).toHaveLength(50);
        return performance.now() - started;
      };
      for (let i = 0; i < 10; i++) await listOnce();
      const quiet: number[] = [];
      for (let i = 0; i < 50; i++) quiet.push(await listOnce());
      const baseDescriptors = descriptorsOf(pid);
      const baseRss = rssOf(pid);

      let peakDescriptors = baseDescriptors;
      let peakRss = baseRss;
      sampler = setInterval(() => {
        peakDescriptors = Math.max(peakDescriptors, descriptorsOf(pid));
        peakRss = Math.max(peakRss, rssOf(pid));
      }, 100);

      const clients = await spawnScript('clients', files, {
        FLOOD_PORT: String(port),
        FLOOD_COUNT: String(count),
        FLOOD_TOKENS: tokens.join(','),
      });
      const spawnedAt = performance.now();
      await nextJson<{ ready: number }>(clients.lines, 'the clients to connect');
      const readyMs = performance.now() - spawnedAt;
      const report = async () => {
        clients.child.kill('SIGUSR2');
        return nextJson<Report>(clients.lines, 'a report');
      };

      // Measured while the clients hold their sockets and the server closes the ones it may close (they reopen them).
      const loaded: number[] = [];
      for (let i = 0; i < 100; i++) loaded.push(await listOnce());
      const quarter = count / 4;
      let latest: Report = await report();
      // Before: no idle socket and no anonymous slow body was ever closed, and an authenticated one only when
      // its body was complete.
      await waitUntil(
        async () => {
          latest = await report();
          return latest.closed.idle! >= quarter && latest.closed.slowAnonymous! >= quarter && latest.closed.slowAuthenticated! >= quarter;
        },
        // 60 s: in a full run the clients' process reopened sockets slowly enough that 20 s saw 432 of 500 idle closes.
        { timeoutMs: 60_000, intervalMs: 250, what: 'the server to close every idle socket and slow body once' },
      ).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}: ${JSON.stringify(latest)}`);
      });
      clearInterval(sampler);
      console.log(
        `${count} clients (connected in ${Math.round(readyMs)} ms, measured for ${Math.round(performance.now() - spawnedAt - readyMs)} ms): list?limit=50 p99 ${p99(loaded).toFixed(1)} ms, p90 ${percentile(loaded, 0.9).toFixed(1)} (quiet ${p99(quiet).toFixed(1)}, ${percentile(quiet, 0.9).toFixed(1)} ms, ${loaded.length} requests); ` +
          `server descriptors ${baseDescriptors} -> peak ${peakDescriptors}; RSS ${(baseRss / 2 ** 20).toFixed(0)} -> peak ${(peakRss / 2 ** 20).toFixed(0)} MiB; ` +
          `closed by the server: ${JSON.stringify(latest.closed)}; open: ${JSON.stringify(latest.open)}`,
      );
      expect(latest.closed.idle).toBeGreaterThanOrEqual(count / 4);
      expect(latest.closed.slowAnonymous).toBeGreaterThanOrEqual(count / 4);
      expect(latest.closed.slowAuthenticated).toBeGreaterThanOrEqual(count / 4);
      // Streams that do not read stay within the limits (8 per token, 1,000 per process): none was refused here.
      expect(latest.closed.stream).toBe(0);
      // Answered promptly under the flood: the p90 within 500 ms, or within five times its own before the flood
      // when the machine is busy. A server starved by the sockets answers in seconds; a quiet machine sees a p90
      // of a few ms (the figure is printed above). In npm test every core is busy with other files, and the
      // clients take their share of it: with 2,000 the p90 reached 244 ms against a quiet 38 ms in a full run, so a
      // tighter bound tests the machine's load rather than the server. The p99 is printed, not asserted: the
      // scheduler's stalls set it as much as the server does.
      expect(percentile(loaded, 0.9)).toBeLessThan(Math.max(500, 5 * percentile(quiet, 0.9)));
      expect(peakDescriptors).toBeLessThanOrEqual(baseDescriptors + count + 50);
      expect(peakRss - baseRss).toBeLessThan(256 * 2 ** 20);

      clients.child.kill('SIGTERM');
      await waitUntil(() => descriptorsOf(pid) <= baseDescriptors + 5, { timeoutMs: 20_000, what: "the server's sockets to be released" });
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      server.child.kill('SIGTERM');
      await new Promise((resolve) => server.child.once('exit', resolve));
    } finally {
      clearInterval(sampler);
      killAll();
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
});
