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
  type Dialect,
  type Driver,
  PostgresDialect,
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
import { createWalDurability, fdatasyncFile, syncDirectory, type WalDurability, type WalSyncer } from './wal-sync.js';

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
  /**
   * Resolves once every commit made so far through this store is on disk. A transaction already waits for
   * its own commit; this is for an answer built from reads, which may see another's commit a sync early
   * (SQLite, wal-sync.ts). Resolves at once on PostgreSQL, whose commits are durable before they are seen.
   */
  durable(): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  dataDir: string;
  databaseUrl?: string | undefined;
  /** Pool size on PostgreSQL. */
  maxConnections?: number;
  /** Run migrations before handing the store out (default true). */
  migrate?: boolean;
  /**
   * SQLite: how the WAL file is synced after commits (default `fdatasync` in the thread pool; wal-sync.ts).
   * Tests pass one they can hold back; `'full'` keeps SQLite's own sync inside COMMIT (`synchronous = FULL`).
   */
  walSync?: WalSyncer | 'full';
}

export const SQLITE_FILE_NAME = 'outbox.sqlite';

export async function openStore(options: StoreOptions): Promise<Store> {
  const store = options.databaseUrl
    ? openPostgres(options.databaseUrl, options.maxConnections ?? 10)
    : openSqlite(options.dataDir, options.walSync ?? fdatasyncFile);
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

function openSqlite(dataDir: string, walSync: WalSyncer | 'full'): Store {
  // The store holds every mail, operator and key hash: only the service's user may read it. Modes are set
  // when Outbox creates the folder and file; an existing folder keeps the modes its operator chose.
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  const file = path.join(dataDir, SQLITE_FILE_NAME);
  // Created here so that SQLite, which gives the -wal and -shm files the database file's mode, never makes
  // a world-readable one.
  createPrivateFile(file);
  const sqlite = new SqliteDatabase(file);
  const journalMode = sqlite.pragma('journal_mode = WAL', { simple: true });
  // FULL: a commit that answered is on disk, power loss included (docs/decisions.md, better-sqlite3). Kept
  // where the WAL cannot be synced from here (below).
  sqlite.pragma('synchronous = FULL');
  // The CLI may write while the server runs; wait for the lock instead of failing at once.
  sqlite.pragma('busy_timeout = 10000');
  sqlite.pragma('foreign_keys = ON');
  // Reads through a memory map of the file instead of a read() call per page missing from SQLite's own 2 MB
  // cache: a list page that reads thousands of rows scattered over the table (a common word's matches, a
  // walk) spends a third of its CPU in those calls at 1M mails. Writes still go through the journal as
  // before. Up to 2 GiB of the file is mapped (address space, not memory: the kernel's page cache backs it).
  sqlite.pragma(`mmap_size = ${SQLITE_MMAP_BYTES}`);
  const wal = journalMode === 'wal' && walSync !== 'full' ? syncingWal(sqlite, file, walSync) : undefined;
  const dialect = new SqliteDialect({ database: withStatementCache(sqlite, wal) });
  const db = new Kysely<Database>({ dialect: wal ? durableDialect(dialect, wal) : dialect });
  const changes = createChangeFeed({ engine: 'sqlite', db });
  return {
    engine: 'sqlite',
    db,
    file,
    changes,
    durable: () => (wal ? wal.durable() : Promise.resolve()),
    async close() {
      await changes.close();
      await db.destroy();
      // The last commits' sync ends before its file is closed (their callers were told already or fail with it).
      await wal?.durable().catch(() => undefined);
      wal?.close();
    },
  };
}

/**
 * Commits with `synchronous = NORMAL` and a grouped fdatasync of the WAL off the event loop (wal-sync.ts,
 * docs/decisions.md). Undefined, and FULL kept, when the WAL file cannot be opened here.
 */
function syncingWal(sqlite: SqliteDatabase.Database, file: string, walSync: WalSyncer): WalDurability | undefined {
  // A read makes SQLite open (and, for a new store, create) its WAL file and keep it for the connection's
  // life: while this connection is open no other process deletes or replaces it (that takes the exclusive
  // lock this connection's shared lock on the -shm file forbids).
  sqlite.prepare('select count(*) from sqlite_master').get();
  let fd: number;
  try {
    fd = fs.openSync(`${file}-wal`, 'r');
  } catch {
    return undefined;
  }
  // The WAL's directory entry made durable once: FULL does it at the WAL's first sync.
  syncDirectory(path.dirname(file));
  sqlite.pragma('synchronous = NORMAL');
  return createWalDurability(fd, walSync);
}

/**
 * Kysely's SQLite driver, except that handing the connection back after a commit (a transaction's, or a
 * write's outside one) waits until it is on disk, once the connection is free for the next transaction: a
 * transaction's or statement's result resolves only once it is durable, while the next transaction already
 * runs during the sync. Reads wait for nothing here; HTTP answers to reads wait in app.ts (`store.durable`).
 */
function durableDialect(dialect: SqliteDialect, wal: WalDurability): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver(): Driver {
      const inner = dialect.createDriver();
      /** Commits marked when the connection was handed out: more at release means this user committed. */
      let markedAtAcquire = 0;
      return {
        init: () => inner.init(),
        async acquireConnection() {
          const connection = await inner.acquireConnection();
          markedAtAcquire = wal.marked;
          return connection;
        },
        beginTransaction: (connection, settings) => inner.beginTransaction(connection, settings),
        commitTransaction: (connection) => inner.commitTransaction(connection),
        rollbackTransaction: (connection) => inner.rollbackTransaction(connection),
        savepoint: (connection, name, compile) => inner.savepoint!(connection, name, compile),
        rollbackToSavepoint: (connection, name, compile) => inner.rollbackToSavepoint!(connection, name, compile),
        releaseSavepoint: (connection, name, compile) => inner.releaseSavepoint!(connection, name, compile),
        async releaseConnection(connection) {
          const committed = wal.marked > markedAtAcquire;
          await inner.releaseConnection(connection);
          if (committed) await wal.durable();
        },
        destroy: () => inner.destroy(),
      };
    },
  };
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
function withStatementCache(sqlite: SqliteDatabase.Database, wal: WalDurability | undefined, capacity = 500) {
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
      if (wal) {
        // Kysely runs the statement right after preparing it: a commit, or a write outside a transaction (which
        // commits by itself), is marked for the next WAL sync. BEGIN IMMEDIATE is not read-only but commits nothing.
        if (
          sql === 'commit' ||
          (!sqlite.inTransaction && !statement.readonly && sql !== 'begin immediate') ||
          /^\s*(release|end)\b/i.test(sql)
        )
          wal.written();
        else if (wal.wantsFull && sql === 'begin immediate') {
          // A sync failed (wal-sync.ts): back to SQLite's own sync in COMMIT, outside a transaction as SQLite asks.
          sqlite.pragma('synchronous = FULL');
          wal.switchedToFull();
        }
      }
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
  return {
    engine: 'postgres',
    db,
    file: undefined,
    changes,
    durable: () => Promise.resolve(),
    close: () => changes.close().then(() => db.destroy()),
  };
}

/**
 * A statement whose text starts with this comment is prepared on the PostgreSQL server once per connection
 * (a named statement) and then only bound and executed: the server parses and plans the worker's claim
 * (mail/transition.repository.ts) once per connection instead of once per batch (issue 25). Only for texts
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
