/**
 * A real store (a copy of the migrated template, template.ts) in a fresh temporary folder, or a fresh PostgreSQL
 * database, and the app on it, driven through inject.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import type { MailDetail, MailDetailResponse } from '@outbox/contract';
import { buildApp, type AppOptions, type AppServices } from '../../src/app.js';
import { LoginThrottle } from '../../src/auth/login-throttle.js';
import { ManualClock } from '../../src/clock.js';
import { openStore, type Engine, type Store } from '../../src/store/connection.js';
import { acquireTestDatabase } from './postgres-pool.js';
import { copySqliteTemplate } from './template.js';

export interface TestContext {
  app: FastifyInstance;
  services: AppServices;
  store: Store;
  clock: ManualClock;
  dataDir: string;
  close(): Promise<void>;
}

export function makeTempDir(prefix = 'outbox-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** The engine this run tests: `OUTBOX_TEST_ENGINE=postgres` runs the same suite on PostgreSQL. */
export const testEngine: Engine = process.env.OUTBOX_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * A fresh PostgreSQL database for one test store. It is a clone of the migrated template (template.ts): the
 * same as an empty database once a store opened it; `empty: true` gives one with no tables, for a test of the
 * migrations themselves. `drop()` hands it back: the next store of this test file gets it again, emptied
 * (postgres-pool.ts), and the file's last hook drops it. Nothing may use it after `drop()`.
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<{ url: string; drop(): Promise<void> }> {
  const database = await acquireTestDatabase(options);
  return { url: database.url, drop: () => database.release() };
}

/**
 * A store on the engine under test, in its own folder (SQLite) or its own database (PostgreSQL), already
 * migrated: a copy of the template (template.ts). On SQLite a store file already in `dataDir` is opened as it is.
 */
export async function openTestStore(dataDir: string): Promise<{ store: Store; databaseUrl: string | undefined; dispose(): Promise<void> }> {
  if (testEngine === 'sqlite') {
    await copySqliteTemplate(dataDir);
    const store = await openStore({ dataDir });
    return { store, databaseUrl: undefined, dispose: () => store.close() };
  }
  const database = await createTestDatabase();
  const store = await openStore({ dataDir, databaseUrl: database.url });
  return {
    store,
    databaseUrl: database.url,
    async dispose() {
      await store.close();
      await database.drop();
    },
  };
}

export async function createTestContext(
  options: {
    throttle?: LoginThrottle;
    sessionTtlSeconds?: number;
    live?: AppOptions['live'];
    remoteImages?: AppOptions['remoteImages'];
  } = {},
): Promise<TestContext> {
  const dataDir = makeTempDir();
  const clock = new ManualClock(Date.parse('2026-11-23T10:00:00Z'));
  const { store, dispose } = await openTestStore(dataDir);
  const { app, services } = await buildApp({
    store,
    clock,
    sessionTtlSeconds: options.sessionTtlSeconds ?? 3600,
    passwordCost: 2 ** 14, // scrypt's N: the product's 2^17 costs ~0.4 s and 128 MiB a hash; the suite logs in hundreds of times
    loginThrottle: options.throttle ?? new LoginThrottle(() => clock.now(), { maxFailuresPerClient: 1000, maxFailuresPerUsername: 1000 }),
    ...(options.live ? { live: options.live } : {}),
    ...(options.remoteImages ? { remoteImages: options.remoteImages } : {}),
  });
  await app.ready();
  return {
    app,
    services,
    store,
    clock,
    dataDir,
    async close() {
      await app.close();
      await dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const PASSWORD = 'correct horse battery';

/** Creates an operator and logs in; returns the token. */
export async function loginAs(context: TestContext, username = 'ops'): Promise<string> {
  try {
    await context.services.auth.addOperator(username, PASSWORD);
  } catch {
    // exists already
  }
  const response = await context.app.inject({ method: 'POST', url: '/api/v1/login', payload: { username, password: PASSWORD } });
  if (response.statusCode !== 200) throw new Error(`login failed: ${response.body}`);
  return (response.json() as { data: Array<{ token: string }> }).data[0]!.token;
}

export const auth = (token: string) => ({ authorization: `Token ${token}`, 'content-type': 'application/json' });

/** GET /api/v1/mail/{id} as the operator holding `token`: asserts 200 and answers the mail's detail. */
export async function getMailDetail(context: TestContext, token: string, id: number): Promise<MailDetail> {
  const response = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}`, headers: auth(token) });
  expect(response.statusCode).toBe(200);
  return (response.json() as MailDetailResponse).data[0]!;
}
