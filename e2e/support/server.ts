/**
 * Starts the BUILT server (server/dist/main.js) the way an operator would, on a fresh temporary DATA_DIR
 * seeded with the real CLI (`cli.js demo`, `cli.js apikey create`). Nothing here mocks the server.
 *
 * The seeding is done once a run (`seedStoreTemplates`, the suite's global setup): a command of the CLI costs
 * about 1.3 s of CPU whatever it does (10–20 s of wall time at load 20), and every server started asked for two
 * or one. Each server then starts on a copy of the seeded DATA_DIR, and all of them hold the same API key.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const serverMain = path.join(repoRoot, 'server', 'dist', 'main.js');
const serverCli = path.join(repoRoot, 'server', 'dist', 'cli.js');

/** What the suite seeds: 130 demo mails (all six statuses), reproducible with seed 7. */
export const DEMO_COUNT = 130;
export const DEMO_SEED = 7;

export interface RunningServer {
  baseURL: string;
  dataDir: string;
  username: string;
  password: string;
  /** An API key for submitting mails (POST /api/v1/mail), made with `cli.js apikey create`. */
  apiKey: string;
  /** The SMTP submission listener (AUTH with apiKey), for mails a JSON submission cannot carry (attachments). */
  smtpPort: number;
  stop: () => Promise<void>;
  /** Stops the server (SIGTERM, graceful) and starts it again on the same port and DATA_DIR. */
  restart: (options?: { downMs?: number }) => Promise<void>;
}

/** Where seedStoreTemplates left its stores: a folder the environment names to the workers. */
const TEMPLATES_ENV = 'OUTBOX_E2E_STORE_TEMPLATES';

export interface ServerOptions {
  /** More environment for the server (e.g. `WORKER: 'on'` for a spec that watches deliveries). */
  env?: NodeJS.ProcessEnv;
  /** Demo mails to seed (DEMO_COUNT by default); 0 starts from an empty store (with the API key). */
  demoCount?: number;
}

/** A loopback port free at the time of asking (for a listener the server is told to open). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => (port > 0 ? resolve(port) : reject(new Error('No free port'))));
    });
  });
}

function requireBuild(): void {
  for (const file of [serverMain, serverCli, path.join(repoRoot, 'web', 'dist', 'index.html')]) {
    if (!fs.existsSync(file)) {
      throw new Error(`${path.relative(repoRoot, file)} is missing: run \`npm run -s build\` before the e2e suite.`);
    }
  }
}

/** Runs a command of the built CLI on `env`'s DATA_DIR; resolves with its output, rejects if it fails. */
function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [serverCli, ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`\`cli.js ${args.join(' ')}\` failed (${code}):\n${output}`));
    });
  });
}

/** Seeds a DATA_DIR with `demoCount` demo mails (none for 0) and an API key `e2e`; resolves with the key. */
async function seedStore(dataDir: string, demoCount: number): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL; // the embedded store, always
  if (demoCount > 0) await runCli(['demo', '--count', String(demoCount), '--seed', String(DEMO_SEED)], env);
  const apiKey = (await runCli(['apikey', 'create', 'e2e'], env)).trim().split('\n').at(-1) ?? '';
  if (!apiKey.startsWith('obx_')) throw new Error(`\`cli.js apikey create\` printed no key: ${apiKey}`);
  return apiKey;
}

const templateDir = (root: string, demoCount: number) => path.join(root, `demo-${demoCount}`);

/**
 * Seeds the stores servers start from, once a run: the suite's (DEMO_COUNT demo mails) and an empty one, both
 * with the API key, side by side. Returns what removes them again.
 */
export async function seedStoreTemplates(): Promise<() => void> {
  requireBuild();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-e2e-templates-'));
  const remove = () => fs.rmSync(root, { recursive: true, force: true });
  try {
    await Promise.all(
      [DEMO_COUNT, 0].map(async (count) => {
        const dir = templateDir(root, count);
        fs.mkdirSync(dir);
        fs.writeFileSync(`${dir}.key`, await seedStore(dir, count));
      }),
    );
  } catch (error) {
    remove();
    throw error;
  }
  process.env[TEMPLATES_ENV] = root;
  return remove;
}

/** Fills a new DATA_DIR with `demoCount` demo mails and the API key: a copy of the run's template if there is one. */
async function fillStore(dataDir: string, demoCount: number): Promise<string> {
  const root = process.env[TEMPLATES_ENV];
  const template = root === undefined ? undefined : templateDir(root, demoCount);
  if (template === undefined || !fs.existsSync(template)) return seedStore(dataDir, demoCount);
  fs.cpSync(template, dataDir, { recursive: true });
  return fs.readFileSync(`${template}.key`, 'utf8');
}

async function waitForHealthy(baseURL: string, child: ChildProcess, logFile: string): Promise<void> {
  // Generous: on a 2-core machine shared with other test runs (load 30) a start took over 30 s.
  const deadline = Date.now() + 120_000;
  let lastError = '';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`The server exited (${child.exitCode ?? child.signalCode}) before it was healthy:\n${readLog(logFile)}`);
    }
    try {
      const response = await fetch(`${baseURL}/healthz`);
      if (response.status === 200) return;
      lastError = `GET /healthz answered ${response.status}`;
    } catch (error) {
      lastError = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`The server did not become healthy in 120 s (${lastError}):\n${readLog(logFile)}`);
}

function readLog(logFile: string): string {
  try {
    return fs.readFileSync(logFile, 'utf8').slice(-4000);
  } catch {
    return '(no log)';
  }
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  requireBuild();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-e2e-'));
  const username = 'e2e-admin';
  const password = `e2e-${Math.random().toString(36).slice(2)}-Pw1`;
  const port = await freePort();
  const baseURL = `http://127.0.0.1:${port}`;
  const smtpPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    OUTBOX_ADMIN_USER: username,
    OUTBOX_ADMIN_PASSWORD: password,
    WORKER: 'off',
    SMTP_PORT: String(smtpPort),
    SMTP_HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // With WORKER=off a mail left due would fire the no-worker alert after a minute, and its banner (role
    // "alert") would move rows and answer role queries in specs about other things; specs/alerts.spec.ts turns
    // it on for its own server.
    ALERTS: 'off',
    // The drawer spec's image host, standing for a sender's, listens on loopback: the image proxy refuses that
    // by default (docs/operations.md), as a server test shows.
    IMAGE_PROXY_ALLOW_PRIVATE: 'true',
    ...options.env,
  };
  delete env.DATABASE_URL; // the embedded store, always

  // Seeded before the server starts, by the operators' own command line (a copy of the run's seeded store).
  let apiKey: string;
  try {
    apiKey = await fillStore(dataDir, options.demoCount ?? DEMO_COUNT);
  } catch (error) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }

  const logFile = path.join(dataDir, 'server.log');
  const spawnServer = () => {
    const log = fs.openSync(logFile, 'a');
    const started = spawn(process.execPath, [serverMain], { cwd: repoRoot, env, stdio: ['ignore', log, log] });
    fs.closeSync(log);
    return started;
  };
  let child = spawnServer();

  const stopChild = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  };
  const stop = async () => {
    await stopChild();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const restart = async ({ downMs = 0 }: { downMs?: number } = {}) => {
    await stopChild();
    await new Promise((resolve) => setTimeout(resolve, downMs));
    child = spawnServer();
    await waitForHealthy(baseURL, child, logFile);
  };

  try {
    await waitForHealthy(baseURL, child, logFile);
  } catch (error) {
    await stop();
    throw error;
  }
  return { baseURL, dataDir, username, password, apiKey, smtpPort, stop, restart };
}
