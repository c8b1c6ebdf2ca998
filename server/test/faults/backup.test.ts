/**
 * `npm run outbox -- backup --out FILE` as an operator runs it: a separate CLI process copying the embedded
 * store while a server process takes and delivers mail. The backup is then restored the documented way
 * (copied into a fresh DATA_DIR as outbox.sqlite) and a server started on it must hold every mail that was
 * acknowledged (202) before the backup began, with its stored message. SQLite half only, because the command
 * copies the SQLite file; on PostgreSQL it must refuse and point to pg_dump.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { createAuthService } from '../../src/auth/auth.service.js';
import type { RunningOutbox } from '../../src/main.js';
import { openStore } from '../../src/store/connection.js';
import { cli, cliProcess } from '../support/cli.js';
import { makeTempDir, testEngine } from '../support/context.js';
import {
  freshEnvironment,
  killAllSpawned,
  spawnOutbox,
  startInProcess,
  type OutboxEnvironment,
  type OutboxProcess,
} from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

/**
 * Each engine's backup is registered only on that engine's half of the suite (`npm test` runs both), so
 * neither half reports the other's tests as skipped.
 */
const describeOn = (engine: string) => (name: string, body: () => void) => {
  if (engine === testEngine) describe(name, body);
};

let environment: OutboxEnvironment | undefined;
let server: OutboxProcess | undefined;
let restored: RunningOutbox | undefined;
let relay: TestRelay | undefined;
const folders: string[] = [];

afterEach(async () => {
  await restored?.stop();
  restored = undefined;
  await killAllSpawned();
  server = undefined;
  await relay?.close();
  relay = undefined;
  await environment?.dispose();
  environment = undefined;
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

describeOn('sqlite')('backup of the embedded store', () => {
  it('taken under intake and delivery load, restores to a store holding every mail acknowledged before it began', async () => {
    relay = await startTestRelay();
    relay.delayMs = 2;
    environment = await freshEnvironment({ RELAY_URL: relay.url });
    folders.push(environment.dataDir);
    const setup = await openStore({ dataDir: environment.dataDir, maxConnections: 1 });
    const apiKey = await createAuthService({ store: setup, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('load');
    await setup.close();
    server = await spawnOutbox(environment.env);
    onTestFailed(() => console.log(`--- server ---\n${server?.output().split('\n').slice(-30).join('\n')}`));

    // Several clients submit small batches without pause, before, during and after the backup.
    const acknowledged: Array<{ id: number; at: number }> = [];
    let sending = true;
    let counter = 0;
    const submitLoop = async () => {
      while (sending) {
        const batch = Array.from({ length: 5 }, () => ({
          fromMail: 'shop@example.com',
          to: [{ recipientMail: `user${counter}@example.net` }],
          subject: `backup load ${counter++}`,
          text: 'x'.repeat(2000),
        }));
        const response = await fetch(`${server!.baseUrl}/api/v1/mail`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
          body: JSON.stringify(batch),
        });
        expect(response.status, await response.clone().text()).toBe(202);
        const at = performance.now();
        for (const mail of ((await response.json()) as { data: Array<{ id: number }> }).data) acknowledged.push({ id: mail.id, at });
      }
    };
    const loops = [submitLoop(), submitLoop(), submitLoop(), submitLoop()];
    // Enough acknowledged mails to make the check mean something, however slow the machine is.
    const deadline = Date.now() + 30_000;
    while (acknowledged.length < 200 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));

    const backupFile = path.join(makeTempDir('outbox-backup-'), 'outbox-backup.sqlite');
    folders.push(path.dirname(backupFile));
    const backupStarted = performance.now();
    const result = await cliProcess(['backup', '--out', backupFile], environment.env);
    const acknowledgedDuringBackup = acknowledged.filter((mail) => mail.at > backupStarted).length;
    sending = false;
    await Promise.all(loops);

    expect(result, result.stderr).toMatchObject({ code: 0, stdout: expect.stringContaining(`to ${backupFile}:`) });
    // The load really ran while the backup was taken.
    expect(acknowledgedDuringBackup).toBeGreaterThan(0);
    const before = acknowledged.filter((mail) => mail.at < backupStarted).map((mail) => mail.id);
    expect(before.length).toBeGreaterThanOrEqual(200);
    expect(fs.readdirSync(path.dirname(backupFile))).toEqual(['outbox-backup.sqlite']);
    // The copy is the whole store: readable by its owner only.
    expect(fs.statSync(backupFile).mode & 0o777).toBe(0o600);

    // Restore as documented: the file becomes DATA_DIR/outbox.sqlite of a server that is not running.
    const restoreDir = makeTempDir('outbox-restore-');
    folders.push(restoreDir);
    fs.copyFileSync(backupFile, path.join(restoreDir, 'outbox.sqlite'));
    restored = await startInProcess({ ...environment.env, DATA_DIR: restoreDir, WORKER: 'off', SMTP_PORT: '0' });
    const login = await restored.app.inject({
      method: 'POST',
      url: '/api/v1/login',
      payload: { username: 'ops', password: 'correct horse battery' },
    });
    const token = (login.json() as { data: Array<{ token: string }> }).data[0]!.token;
    const missing: number[] = [];
    for (const id of before) {
      const response = await restored.app.inject({
        method: 'GET',
        url: `/api/v1/mail/${id}`,
        headers: { authorization: `Token ${token}` },
      });
      if (response.statusCode !== 200) missing.push(id);
    }
    expect(missing).toEqual([]);
    // The stored message came along, not only the list row.
    const raw = await restored.app.inject({
      method: 'GET',
      url: `/api/v1/mail/${before[before.length - 1]}/raw`,
      headers: { authorization: `Token ${token}` },
    });
    expect(raw.statusCode).toBe(200);
    expect(raw.body).toContain(`Subject: backup load`);
    expect(raw.body).toContain('x'.repeat(70));
  }, 90_000);

  it('refuses without --out, and when DATA_DIR holds no store (rather than backing up a new empty one)', async () => {
    const empty = makeTempDir('outbox-nostore-');
    folders.push(empty);
    expect(await cli(['backup'], { DATA_DIR: empty, DATABASE_URL: '' })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('backup needs --out FILE'),
    });
    expect(await cli(['backup', '--out', path.join(empty, 'copy.sqlite')], { DATA_DIR: empty, DATABASE_URL: '' })).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('There is no store at'),
    });
    expect(fs.readdirSync(empty)).toEqual([]);
  });
});

describeOn('postgres')('backup on PostgreSQL', () => {
  it('says to use pg_dump and writes nothing', async () => {
    environment = await freshEnvironment();
    folders.push(environment.dataDir);
    const out = path.join(environment.dataDir, 'copy.sqlite');
    expect(await cli(['backup', '--out', out], environment.env)).toMatchObject({ code: 1, stderr: expect.stringContaining('pg_dump') });
    expect(fs.existsSync(out)).toBe(false);
  });
});
