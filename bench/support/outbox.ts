/**
 * The real server for a benchmark: `start(config)` of server/src/main.ts with a config built by `loadConfig`
 * from an environment object, on a fresh temporary DATA_DIR (SQLite) or a scratch PostgreSQL database,
 * HTTP on a port the OS picks, and an API key created in-process (as `apikey create` does).
 */
import path from 'node:path';
import { loadConfig } from '../../server/src/config.js';
import { start, type RunningOutbox } from '../../server/src/main.js';
import { benchDir, makeTempDir, removeDir } from './common.js';
import { createScratchDatabase, type ScratchDatabase } from './postgres.js';

export type Engine = 'sqlite' | 'postgres';

export const BENCH_ADMIN = { username: 'bench', password: 'bench-password-not-secret' };

export interface BenchOutbox {
  running: RunningOutbox;
  engine: Engine;
  dataDir: string;
  apiKey: string;
  baseUrl: string;
  /** Stops the server, then removes its folder and drops its database (unless kept). */
  close(): Promise<void>;
}

export interface StartBenchOutboxOptions {
  engine: Engine;
  /** Extra environment (WORKER, RELAY_URL, SMTP_PORT, WORKER_CONCURRENCY...). */
  env?: Record<string, string>;
  /** Use this folder/database instead of fresh ones, and keep them on close. */
  dataDir?: string;
  databaseUrl?: string;
  label?: string;
}

export async function startBenchOutbox(options: StartBenchOutboxOptions): Promise<BenchOutbox> {
  const ownsDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? makeTempDir(`outbox-bench-${options.label ?? 'run'}-`);
  let scratch: ScratchDatabase | undefined;
  let databaseUrl = options.databaseUrl;
  if (options.engine === 'postgres' && databaseUrl === undefined) {
    scratch = await createScratchDatabase(options.label ?? 'run');
    databaseUrl = scratch.url;
  }
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    SMTP_PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'error',
    OUTBOX_ADMIN_USER: BENCH_ADMIN.username,
    OUTBOX_ADMIN_PASSWORD: BENCH_ADMIN.password,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...options.env,
  });
  // No console is served: the benchmarks measure the API.
  const running = await start(config, { consoleDir: path.join(benchDir, 'no-console') });
  const apiKey = await running.services.auth.createApiKey(`bench-${Date.now()}`);
  return {
    running,
    engine: options.engine,
    dataDir,
    apiKey,
    baseUrl: `http://127.0.0.1:${running.httpPort}`,
    async close() {
      await running.stop();
      if (ownsDir) removeDir(dataDir);
      await scratch?.drop();
    },
  };
}

/** An operator token for the console's calls (list, detail...). */
export async function operatorToken(outbox: BenchOutbox): Promise<string> {
  const session = await outbox.running.services.auth.login(BENCH_ADMIN.username, BENCH_ADMIN.password, 'bench');
  return session.token;
}
