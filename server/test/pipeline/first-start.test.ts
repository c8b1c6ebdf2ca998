/**
 * A first start as an operator sees it, in a child process with its own stdout and
 * stderr: with no operator configured, the created admin password is written to the terminal (stderr, a
 * plain line) and never to the JSON log on stdout; DATA_DIR, the SQLite file and its WAL, and the
 * capture relay's captured/ folder and files are readable by the service's user only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createAuthService } from '../../src/auth/auth.service.js';
import { openStore } from '../../src/store/connection.js';
import { freshEnvironment, nodeArgs, type OutboxEnvironment } from '../support/outbox-process.js';
import { freePort, waitUntil } from '../support/net.js';
import { testEngine } from '../support/context.js';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

let environment: OutboxEnvironment | undefined;
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  await environment?.dispose();
});

describe(`the first start (${testEngine})`, () => {
  it('writes the created admin password to stderr only, and creates its files for its own user', async () => {
    environment = await freshEnvironment();
    // A DATA_DIR that does not exist yet, so that Outbox creates it.
    const dataDir = path.join(environment.dataDir, 'fresh', 'data');
    const port = await freePort();
    const env: Record<string, string | undefined> = {
      ...process.env,
      ...environment.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      LOG_LEVEL: 'info',
      OUTBOX_ADMIN_USER: undefined,
      OUTBOX_ADMIN_PASSWORD: undefined,
      RELAY_URL: undefined,
    };
    let stdout = '';
    let stderr = '';
    child = spawn(process.execPath, nodeArgs('main'), { cwd: serverDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const baseUrl = `http://127.0.0.1:${port}`;
    // The run's bundle starts in about a second; a busy two-core machine can make that many times longer.
    await waitUntil(
      async () => {
        if (child!.exitCode !== null) throw new Error(`outbox exited with ${child!.exitCode}:\n${stdout}\n${stderr}`);
        return fetch(`${baseUrl}/healthz`).then(
          (response) => response.ok,
          () => false,
        );
      },
      { timeoutMs: 90_000, intervalMs: 50, what: 'outbox to answer /healthz' },
    );

    const line =
      /^No operator existed: created operator "admin" with password "([^"]+)"\. Change it with: npm run outbox -- user passwd admin$/m.exec(
        stderr,
      );
    expect(line, stderr).not.toBeNull();
    const password = line![1]!;
    expect(stdout).not.toContain(password);
    const logged = stdout
      .split('\n')
      .filter(Boolean)
      .map((text) => JSON.parse(text) as { msg?: string });
    expect(logged.map((entry) => entry.msg)).toContain(
      'No operator existed: created operator "admin"; its password was written to the terminal (stderr), not to this log',
    );
    const login = await fetch(`${baseUrl}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    expect(login.status).toBe(200);

    // One mail through the capture relay, so that captured/ and its files exist.
    const store = await openStore({ dataDir, databaseUrl: environment.env.DATABASE_URL, maxConnections: 1 });
    const apiKey = await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('first-start');
    await store.close();
    const submitted = await fetch(`${baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'modes', text: 'x' }),
    });
    expect(submitted.status).toBe(202);
    const captured = path.join(dataDir, 'captured');
    await waitUntil(() => fs.existsSync(captured) && fs.readdirSync(captured).some((name) => name.endsWith('.json')), {
      timeoutMs: 20_000,
      what: 'the mail in captured/',
    });

    expect(modeOf(dataDir)).toBe(0o700);
    expect(modeOf(captured)).toBe(0o700);
    for (const name of fs.readdirSync(captured)) expect([name, modeOf(path.join(captured, name))]).toEqual([name, 0o600]);
    if (testEngine === 'sqlite') {
      for (const name of ['outbox.sqlite', 'outbox.sqlite-wal']) expect([name, modeOf(path.join(dataDir, name))]).toEqual([name, 0o600]);
    }
  }, 150_000);
});
