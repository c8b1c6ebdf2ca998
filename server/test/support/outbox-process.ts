/**
 * The whole service, as a user runs it: in this process through start(config) (the same wiring as
 * `npm start`), or as a separate Node process that a test may kill with SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { start, type RunningOutbox } from '../../src/main.js';
import { createTestDatabase, makeTempDir, testEngine } from './context.js';
import { freePort, waitUntil } from './net.js';
import { copySqliteTemplate } from './template.js';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface OutboxEnvironment {
  env: Record<string, string>;
  dataDir: string;
  /** Drops the PostgreSQL database, when the engine under test is PostgreSQL. */
  dispose(): Promise<void>;
}

/**
 * The environment of a fresh installation on the engine under test. Its store is already migrated (a copy of
 * the template, template.ts), as after a first start; `emptyStore: true` leaves it without tables, for a test
 * of the migrations at start-up. A `DATABASE_URL` of '' in `env` means the embedded SQLite store.
 */
export async function freshEnvironment(
  env: Record<string, string> = {},
  options: { emptyStore?: boolean } = {},
): Promise<OutboxEnvironment> {
  const dataDir = makeTempDir('outbox-pipeline-');
  const engine = env.DATABASE_URL === '' ? 'sqlite' : env.DATABASE_URL ? 'given' : testEngine;
  const database = engine === 'postgres' ? await createTestDatabase({ empty: options.emptyStore ?? false }) : undefined;
  if (engine === 'sqlite' && !options.emptyStore) await copySqliteTemplate(dataDir);
  return {
    dataDir,
    env: {
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      SMTP_PORT: '0',
      LOG_LEVEL: 'silent',
      OUTBOX_ADMIN_USER: 'ops',
      OUTBOX_ADMIN_PASSWORD: 'correct horse battery',
      ...(database ? { DATABASE_URL: database.url } : {}),
      ...env,
    },
    dispose: async () => database?.drop(),
  };
}

export function startInProcess(env: Record<string, string>): Promise<RunningOutbox> {
  return start(loadConfig(env), { consoleDir: path.join(serverDir, 'no-console') });
}

/** Every process spawned here and not yet gone, so a test that fails half-way leaves none running. */
const spawned = new Set<ChildProcess>();

export async function killAllSpawned(): Promise<void> {
  await Promise.all(
    [...spawned].map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      return exited;
    }),
  );
  spawned.clear();
}

export interface OutboxProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful), then waits for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * The command that starts `file` (src/main.ts or src/cli/main.ts) as a process: the run's bundle of it
 * (global-setup.ts), or the sources through tsx when the run has none (a file run outside vitest.config.ts).
 */
export function nodeArgs(file: 'main' | 'cli'): string[] {
  const bundle = inject('outboxBundle') as { main: string; cli: string } | undefined;
  return bundle ? ['--enable-source-maps', bundle[file]] : ['--import', 'tsx', file === 'main' ? 'src/main.ts' : 'src/cli/main.ts'];
}

/** The server as its own process (nodeArgs), on a fixed HTTP port, ready once /healthz answers. */
export async function spawnOutbox(env: Record<string, string>): Promise<OutboxProcess> {
  const port = env.PORT && env.PORT !== '0' ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, nodeArgs('main'), {
    cwd: serverDir,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: env.LOG_LEVEL === 'silent' ? 'warn' : (env.LOG_LEVEL ?? 'warn') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.add(child);
  child.once('exit', () => spawned.delete(child));
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  // Without the bundle, a cold start compiles the TypeScript through tsx; on a busy two-core machine that alone
  // can take half a minute, so the bound is generous.
  const startMs = 90_000;
  try {
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`outbox exited with ${child.exitCode} before it was ready`);
        try {
          return (await fetch(`${baseUrl}/healthz`)).ok;
        } catch {
          return false; // not listening yet
        }
      },
      { timeoutMs: startMs, intervalMs: 50, what: 'outbox to answer /healthz' },
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}:\n${output}`);
  }
  return {
    child,
    baseUrl,
    output: () => output,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
