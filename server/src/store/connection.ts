/**
 * Opens the store: SQLite (better-sqlite3, WAL, durable commits) in DATA_DIR by default, or PostgreSQL when
 * DATABASE_URL is a postgres:// URL. Everything above this file talks to `Kysely<Database>` and never asks
 * which engine it is, except the repositories' few engine-specific statements, which read `store.engine`.
 */
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  Kysely,
  PostgresDialect,
  sql,
  SqliteDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type SqliteStatement,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import { createChangeFeed, type ChangeFeed } from './change-feed.js';
import type { Database } from './schema.js';
import { migrateToLatest } from './migrate.js';
import { createPrivateFile, PRIVATE_DIRECTORY_MODE } from './private-files.js';

export type Engine = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
export type DbOrTrx = Kysely<Database> | Transaction<Database>;

export interface Store {
  engine: Engine;
  db: Db;
  /** Where the SQLite file lives; undefined on PostgreSQL. */
  file: string | undefined;
  /** Mail changes, told to this process and, on PostgreSQL, to every instance sharing the database. */
  changes: ChangeFeed;
  close(): Promise<void>;
}

export interface StoreOptions {
  dataDir: string;
  databaseUrl?: string | undefined;
  /** Pool size on PostgreSQL. */
  maxConnections?: number;
  /** Run migrations before handing the store out (default true). */
  migrate?: boolean;
}

export const SQLITE_FILE_NAME = 'outbox.sqlite';

/**
 * The cheapest round trip to the store; rejects while it does not answer. /healthz asks it (health/health.service.ts),
 * and so does the worker while its writes fail (delivery/worker.ts).
 */
export async function probeStore(db: DbOrTrx): Promise<void> {
  await sql`select 1`.execute(db);
}

export async function openStore(options: StoreOptions): Promise<Store> {
  const store = options.databaseUrl ? openPostgres(options.databaseUrl, options.maxConnections ?? 10) : openSqlite(options.dataDir);
  if (options.migrate !== false) {
    try {
      await migrateToLatest(store);
    } catch (error) {
      await store.close();
      throw error;
    }
  }
  return store;
}

/** SQLite's compiled-in ceiling of the memory map (SQLITE_MAX_MMAP_SIZE, 0x7fff0000); a larger value is cut to it. */
const SQLITE_MMAP_BYTES = 0x7fff0000;

function openSqlite(dataDir: string): Store {
  // The store holds every mail, operator and key hash: only the service's user may read it. Modes are set
  // when Outbox creates the folder and file; an existing folder keeps the modes its operator chose.
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  const file = path.join(dataDir, SQLITE_FILE_NAME);
  // Created here so that SQLite, which gives the -wal and -shm files the database file's mode, never makes
  // a world-readable one.
  createPrivateFile(file);
  const sqlite = new SqliteDatabase(file);
  sqlite.pragma('journal_mode = WAL');
  // FULL: a commit that answered is on disk, power loss included (docs/decisions.md, better-sqlite3).
  sqlite.pragma('synchronous = FULL');
  // The CLI may write while the server runs; wait for the lock instead of failing at once.
  sqlite.pragma('busy_timeout = 10000');
  sqlite.pragma('foreign_keys = ON');
  // Reads through a memory map of the file instead of a read() call per page missing from SQLite's own 2 MB
  // cache: a list page that reads thousands of rows scattered over the table (a common word's matches, a
  // walk) spends a third of its CPU in those calls at 1M mails. Writes still go through the journal as
  // before. Up to 2 GiB of the file is mapped (address space, not memory: the kernel's page cache backs it).
  sqlite.pragma(`mmap_size = ${SQLITE_MMAP_BYTES}`);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  const changes = createChangeFeed({ engine: 'sqlite', db });
  return { engine: 'sqlite', db, file, changes, close: () => changes.close().then(() => db.destroy()) };
}

/** What `prepare('rollback')` hands out when SQLite has already ended the transaction (see below). */
const alreadyRolledBack: SqliteStatement = {
  reader: false,
  all: () => [],
  run: () => ({ changes: 0, lastInsertRowid: 0 }),
  iterate: () => [][Symbol.iterator](),
};

/**
 * Kysely's SQLite driver prepares every statement anew; preparing costs more than running most of ours.
 * The queue and intake issue the same few SQL texts over and over, so prepared statements are kept by text
 * (bounded; statements with a varying number of placeholders make many texts). The driver runs each
 * statement to completion before the next (all() or run(), never an open iterator), so reuse is safe.
 */
function withStatementCache(sqlite: SqliteDatabase.Database, capacity = 500) {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    prepare(text: string) {
      // SQLite ends the transaction by itself on some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM). Kysely
      // then issues ROLLBACK anyway, which fails with "no transaction is active" and replaces the real error:
      // a full disk answered 500 instead of 507. There is nothing left to roll back, so that ROLLBACK is a no-op.
      if (text === 'rollback' && !sqlite.inTransaction) return alreadyRolledBack;
      // Kysely begins a plain (deferred) transaction: it reads first and asks for the write lock at its first
      // write. When another process (the CLI beside the server, or the server beside the CLI) committed in
      // between, SQLite cannot upgrade that reader and answers "database is locked" at once, without the busy
      // timeout (SQLITE_BUSY_SNAPSHOT). IMMEDIATE takes the write lock at BEGIN, where busy_timeout waits for
      // it. One connection per process runs one transaction at a time, so nothing in the process waits more.
      const sql = text === 'begin' ? 'begin immediate' : text;
      let statement = cache.get(sql);
      if (statement) {
        // Least recently used goes first: move this one to the end.
        cache.delete(sql);
      } else {
        statement = sqlite.prepare(sql);
        if (cache.size >= capacity) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
    close() {
      cache.clear();
      sqlite.close();
    },
  };
}

function openPostgres(url: string, max: number): Store {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    // int8 (ids, millisecond instants, counters) fits a JS number for the next 285,000 years.
    types: {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format),
    } as pg.CustomTypesConfig,
  });
  // A pooled connection can die at any moment (server restart, failover, pg_terminate_backend: 57P01). pg
  // emits 'error' on the client, and an 'error' with no listener ends the process. The pool listens only
  // while a client is idle, so a client checked out by a transaction (between two statements, or when the
  // socket closes under a running query) had none: one database restart killed every instance. Every client
  // now has a listener for its whole life; the statement that was running fails (the caller maps it to 503
  // via isStoreUnavailableError), and the pool drops the client on release because it is no longer
  // queryable, so the next query opens a fresh connection: the instance reconnects by itself.
  pool.on('connect', (client) => {
    client.on('error', (error) => {
      process.emitWarning(`PostgreSQL connection lost: ${error.message}`);
    });
  });
  // The pool's own report of an idle client's death (the client listener above already warned).
  pool.on('error', () => undefined);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
  const changes = createChangeFeed({
    engine: 'postgres',
    db,
    databaseUrl: url,
    onError: (error) => process.emitWarning(`PostgreSQL change feed (LISTEN/NOTIFY): ${error.message}; reconnecting`),
  });
  return { engine: 'postgres', db, file: undefined, changes, close: () => changes.close().then(() => db.destroy()) };
}

/**
 * A statement whose text starts with this comment is prepared on the PostgreSQL server once per connection
 * (a named statement) and then only bound and executed: the server parses and plans the worker's claim
 * (mail/write/) once per connection instead of once per batch. Only for texts
 * that repeat exactly and are few; every other statement stays unnamed, so no connection collects an
 * unbounded number of prepared statements and no list query is held to a generic plan.
 */
export const PREPARED = '/* prepared */';
/** Named statements at most, over the process; a text beyond them runs unnamed (a mistake, not a leak). */
const MAX_PREPARED_TEXTS = 100;

function preparingPool(pool: pg.Pool): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_PREPARED_TEXTS) {
      name = `outbox_${names.size + 1}`;
      names.set(text, name);
    }
    return name;
  };
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let preparing = clients.get(client);
      if (!preparing) {
        preparing = {
          query(textOrCursor: unknown, values?: ReadonlyArray<unknown>) {
            const name = typeof textOrCursor === 'string' && textOrCursor.startsWith(PREPARED) ? nameOf(textOrCursor) : undefined;
            if (name !== undefined) return client.query({ name, text: textOrCursor as string, values: values ? [...values] : [] });
            return client.query(textOrCursor as string, values ? [...values] : undefined);
          },
          release: () => client.release(),
          // pg's client.query answers both of Kysely's overloads (a text with values, or a cursor); TypeScript
          // cannot check a forwarding function against an overloaded signature.
        } as unknown as PostgresPoolClient;
        clients.set(client, preparing);
      }
      return preparing;
    },
    end: () => pool.end(),
  };
}
