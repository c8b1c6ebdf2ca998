/**
 * A real store (a copy of the migrated template, template.ts) in a fresh temporary folder, or a fresh PostgreSQL
 * database, and the app on it, driven through inject.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
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
  /**
   * Puts the store back as it was when the context was made (every row a test wrote gone, ids counting from
   * where they started) and the clock back to its start, keeping the app: for a file that shares one context
   * and gives each test a clean store (`afterEach(() => context.reset())`). The app's memory is not reset:
   * what a test relies on there (an API key it created, a login) it makes afresh in `beforeEach`.
   */
  reset(): Promise<void>;
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

/**
 * argon2id's memory in KiB for the operators of a test context: 1 MiB hashes in about a millisecond, and the
 * suite logs in hundreds of times. The product's 19 MiB is tested where it is the subject
 * (login-hardening.test.ts), and a test that times a login passes more.
 */
export const TEST_PASSWORD_COST = 2 ** 10;

const CONTEXT_START = Date.parse('2026-11-23T10:00:00Z');

export async function createTestContext(
  options: {
    throttle?: LoginThrottle;
    sessionTtlSeconds?: number;
    live?: AppOptions['live'];
    remoteImages?: AppOptions['remoteImages'];
    passwordCost?: number;
  } = {},
): Promise<TestContext> {
  const dataDir = makeTempDir();
  const clock = new ManualClock(CONTEXT_START);
  const { store, dispose } = await openTestStore(dataDir);
  const { app, services } = await buildApp({
    store,
    clock,
    sessionTtlSeconds: options.sessionTtlSeconds ?? 3600,
    passwordCost: options.passwordCost ?? TEST_PASSWORD_COST,
    loginThrottle: options.throttle ?? new LoginThrottle(() => clock.now(), { maxFailuresPerClient: 1000, maxFailuresPerUsername: 1000 }),
    ...(options.live ? { live: options.live } : {}),
    ...(options.remoteImages ? { remoteImages: options.remoteImages } : {}),
  });
  await app.ready();
  // Taken after the app started: what it wrote on start (a server secret) is part of the clean state.
  const snapshot = await snapshotStore(store);
  return {
    app,
    services,
    store,
    clock,
    dataDir,
    async reset() {
      await restoreStore(store, snapshot);
      clock.set(CONTEXT_START);
    },
    async close() {
      await app.close();
      await dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface StoreSnapshot {
  /** Every table the app writes, each table before those it references, with its rows at the snapshot. */
  tables: Array<{ name: string; rows: Array<Record<string, unknown>> }>;
  /** SQLite: the rows of sqlite_sequence. PostgreSQL: each sequence, its value and whether it was used. */
  sequences: Array<Record<string, unknown>>;
}

// Not the migrations' bookkeeping, and not SQLite's own tables nor the full-text index's shadow tables
// (the triggers on `mails` keep the index in step as its rows are deleted).
const isAppTable = (name: string) => !/^(kysely_|sqlite_|mails_fts)/.test(name);

const TABLES = {
  sqlite: sql<{ name: string }>`select name from sqlite_master where type = 'table' order by name`,
  postgres: sql<{ name: string }>`select tablename as name from pg_tables where schemaname = 'public' order by tablename`,
};
/** Which table references which: PostgreSQL checks foreign keys at each DELETE; SQLite defers them (below). */
const REFERENCES = sql<{ from: string; to: string }>`
  select conrelid::regclass::text as "from", confrelid::regclass::text as "to"
  from pg_constraint where contype = 'f' and connamespace = 'public'::regnamespace`;
const SEQUENCES = {
  sqlite: sql<Record<string, unknown>>`select name, seq from sqlite_sequence`,
  postgres: sql<Record<string, unknown>>`
    select quote_ident(sequencename) as name, coalesce(last_value, start_value) as value, last_value is not null as called
    from pg_sequences where schemaname = 'public'`,
};

async function snapshotStore(store: Store): Promise<StoreSnapshot> {
  const names = (await TABLES[store.engine].execute(store.db)).rows.map((row) => row.name).filter(isAppTable);
  const references = store.engine === 'postgres' ? (await REFERENCES.execute(store.db)).rows : [];
  const tables: StoreSnapshot['tables'] = [];
  for (const name of referencingFirst(names, references))
    tables.push({ name, rows: (await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(store.db)).rows });
  return { tables, sequences: (await SEQUENCES[store.engine].execute(store.db)).rows };
}

/** The tables ordered so that each comes before every table it references. */
function referencingFirst(tables: string[], references: Array<{ from: string; to: string }>): string[] {
  const ordered: string[] = [];
  const visit = (table: string, path: Set<string>) => {
    if (ordered.includes(table) || path.has(table)) return;
    path.add(table);
    for (const { from, to } of references) if (to === table && from !== table) visit(from, path);
    ordered.push(table);
  };
  for (const table of tables) visit(table, new Set());
  return ordered.filter((table) => tables.includes(table));
}

/**
 * Back to the snapshot in one transaction, through the app's own store (its connections stay open). DELETE,
 * not TRUNCATE: a test leaves a few rows, and PostgreSQL's TRUNCATE makes new files for every table and
 * index (seconds per reset on a busy machine, against milliseconds).
 */
async function restoreStore(store: Store, snapshot: StoreSnapshot): Promise<void> {
  await store.db.transaction().execute(async (tx) => {
    if (store.engine === 'sqlite') await sql`pragma defer_foreign_keys = on`.execute(tx);
    for (const { name } of snapshot.tables) await sql`delete from ${sql.table(name)}`.execute(tx);
    if (store.engine === 'sqlite') {
      await sql`delete from sqlite_sequence`.execute(tx);
      for (const row of snapshot.sequences) await sql`insert into sqlite_sequence (name, seq) values (${row.name}, ${row.seq})`.execute(tx);
    } else
      for (const row of snapshot.sequences) await sql`select setval(${row.name}::text::regclass, ${row.value}, ${row.called})`.execute(tx);
    for (const { name, rows } of [...snapshot.tables].reverse())
      if (rows.length > 0)
        await tx
          .insertInto(name as never)
          .values(rows as never)
          .execute();
  });
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
