/**
 * Two processes writing one SQLite store, as the CLI beside a running server does: a transaction that reads
 * before it writes must wait for the other's write lock (busy_timeout), not fail with "database is locked".
 * A deferred BEGIN failed so at once whenever the other process committed between its read and its write
 * (SQLITE_BUSY_SNAPSHOT; first seen as `createApiKey` beside a server at load 17). SQLite only: the
 * PostgreSQL half leaves this file out (vitest.config.ts).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAuthService } from '../../src/auth/auth.service.js';
import { openStore } from '../../src/store/connection.js';
import { makeTempDir, openTestStore } from '../support/context.js';

// The other process: commits a row every millisecond or so, for as long as it runs.
const WRITER = `
const Database = require('better-sqlite3');
const db = new Database(process.argv[1]);
db.pragma('busy_timeout = 10000');
const insert = db.prepare("insert into audit_log (at, actor, action) values (?, 'writer', 'tick')");
process.stdout.write('ready\\n');
const until = Date.now() + Number(process.argv[2]);
(function tick() {
  if (Date.now() > until) return db.close();
  insert.run(Date.now());
  setTimeout(tick, 1);
})();
`;

describe('two processes on one SQLite store', () => {
  const dataDir = makeTempDir('outbox-two-processes-');
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('read-then-write transactions in this process all commit while another process commits every millisecond', async () => {
    const prepared = await openTestStore(dataDir);
    await prepared.dispose(); // the migrated file in place
    const store = await openStore({ dataDir });
    cleanups.push(() => store.close());
    const auth = createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 });

    const writer = spawn(process.execPath, ['-e', WRITER, path.join(dataDir, 'outbox.sqlite'), '4000'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => writer.once('exit', resolve));
    await new Promise<void>((resolve) => writer.stdout!.once('data', () => resolve()));

    // createApiKey reads (is the name taken?) and then writes, in one transaction.
    const failures: string[] = [];
    for (let i = 0; i < 200; i++) {
      await auth.createApiKey(`key-${i}`).catch((error: unknown) => failures.push((error as Error).message));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await exited;
    expect(failures).toEqual([]);
    const keys = await store.db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(keys.n)).toBe(200);
  }, 60_000);
});
