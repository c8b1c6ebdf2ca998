/** The built server as a child process, for the benchmarks that drive the console in Chromium. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { benchDir } from './common.js';
import { BENCH_ADMIN } from './outbox.js';

const repoRoot = path.resolve(benchDir, '..');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** The BUILT server (server/dist/main.js serving web/dist) in a child process on `dataDir` (or `databaseUrl`), WORKER=off and no SMTP, ready once /healthz answers; its pid, for its CPU from /proc. */
export async function startBuiltServer(dataDir: string, databaseUrl: string | undefined) {
  const main = path.join(repoRoot, 'server', 'dist', 'main.js');
  if (!fs.existsSync(main) || !fs.existsSync(path.join(repoRoot, 'web', 'dist', 'index.html'))) {
    throw new Error('server/dist or web/dist is missing: run `npm run -s build` first');
  }
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    SMTP_PORT: 'off',
    WORKER: 'off',
    LOG_LEVEL: 'error',
    OUTBOX_ADMIN_USER: BENCH_ADMIN.username,
    OUTBOX_ADMIN_PASSWORD: BENCH_ADMIN.password,
  };
  delete env.DATABASE_URL;
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const child = spawn(process.execPath, [main], { cwd: repoRoot, env, stdio: ['ignore', 'inherit', 'inherit'] });
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode})`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the server did not become healthy in 120 s');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    baseUrl,
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
