/**
 * Migrate once, clone per store. Every test store starts as a copy of a store that the migrations already ran
 * on: a copied SQLite file, or on PostgreSQL `CREATE DATABASE … TEMPLATE`. Migrating an empty PostgreSQL
 * database took most of a test store's set-up; a clone takes one statement.
 *
 * The template is named by a hash of the migration sources (src/store/migrate.ts and src/store/migrations/*),
 * so a new or changed migration makes a new template on the next run and an older one is never used by
 * mistake. Worktrees with different migrations use different templates side by side. It is built once per
 * machine and kept: the vitest globalSetup (global-setup.ts) builds it before the test files start, and
 * every helper here also makes sure of it (once per process), so a file run outside that config still works.
 * Concurrent runs do not race: PostgreSQL builds under an advisory lock and renames the finished database
 * into place; SQLite builds in a private folder and renames the finished file into place.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { openStore, SQLITE_FILE_NAME } from '../../src/store/connection.js';

/** The PostgreSQL server the tests create their databases on, as a URL of a database to connect to first. */
export const postgresAdminUrl = process.env.OUTBOX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const storeSources = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/store');

/** The first 12 hex digits of a SHA-256 over migrate.ts and every file in migrations/, names and contents. */
export function migrationsHash(): string {
  const files = [
    'migrate.ts',
    ...fs
      .readdirSync(path.join(storeSources, 'migrations'))
      .sort()
      .map((name) => `migrations/${name}`),
  ];
  const hash = crypto.createHash('sha256');
  for (const file of files)
    hash
      .update(`${file}\0`)
      .update(fs.readFileSync(path.join(storeSources, file)))
      .update('\0');
  return hash.digest('hex').slice(0, 12);
}

const sqliteTemplateDir = path.join(os.tmpdir(), 'outbox-test-templates');

/** Where the migrated SQLite template of today's migrations lives. */
export const sqliteTemplateFile = (): string => path.join(sqliteTemplateDir, `outbox-${migrationsHash()}.sqlite`);

/** The name of the migrated PostgreSQL template database of today's migrations. */
export const postgresTemplateName = (): string => `outbox_test_template_${migrationsHash()}`;

let sqliteReady: Promise<string> | undefined;

/** Builds the SQLite template unless it exists; answers its path. */
export function ensureSqliteTemplate(): Promise<string> {
  sqliteReady ??= (async () => {
    const file = sqliteTemplateFile();
    if (fs.existsSync(file)) return file;
    fs.mkdirSync(sqliteTemplateDir, { recursive: true });
    const buildDir = fs.mkdtempSync(path.join(sqliteTemplateDir, 'building-'));
    try {
      const store = await openStore({ dataDir: buildDir });
      // Everything into the main file, so that the file alone is the whole store.
      await sql`pragma wal_checkpoint(truncate)`.execute(store.db);
      await store.close();
      // Atomic: a concurrent run sees no file or the whole file. Two builders write the same bytes.
      fs.renameSync(path.join(buildDir, SQLITE_FILE_NAME), file);
    } finally {
      fs.rmSync(buildDir, { recursive: true, force: true });
    }
    return file;
  })();
  return sqliteReady;
}

/** Puts a migrated SQLite store into `dataDir`, unless one is there already (a test reopening its store). */
export async function copySqliteTemplate(dataDir: string): Promise<void> {
  const target = path.join(dataDir, SQLITE_FILE_NAME);
  if (fs.existsSync(target)) return;
  const template = await ensureSqliteTemplate();
  fs.mkdirSync(dataDir, { recursive: true });
  fs.copyFileSync(template, target, fs.constants.COPYFILE_FICLONE);
}

/** One key for every run and worktree on this PostgreSQL server: template builds take turns. */
const TEMPLATE_LOCK = 7_424_116_020;

const postgresReady = new Map<string, Promise<string>>();

/** Builds the PostgreSQL template on the server of `adminUrl` unless it exists; answers its name. */
export function ensurePostgresTemplate(adminUrl: string): Promise<string> {
  let ready = postgresReady.get(adminUrl);
  if (!ready) {
    ready = buildPostgresTemplate(adminUrl);
    postgresReady.set(adminUrl, ready);
    ready.catch(() => postgresReady.delete(adminUrl));
  }
  return ready;
}

async function buildPostgresTemplate(adminUrl: string): Promise<string> {
  const name = postgresTemplateName();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (rowCount === 0) {
      // A builder that died half-way left this behind; we hold the lock, so nobody else is using it.
      const building = `${name}_building`;
      await admin.query(`drop database if exists ${building} with (force)`);
      await admin.query(`create database ${building}`);
      const url = new URL(adminUrl);
      url.pathname = `/${building}`;
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-template-'));
      try {
        const store = await openStore({ dataDir, databaseUrl: url.toString(), maxConnections: 1 });
        await store.close();
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
      // The finished template appears under its name at once, or not at all.
      await admin.query(`alter database ${building} rename to ${name}`);
    }
  } finally {
    await admin.end(); // ends the session, and with it the advisory lock
  }
  return name;
}
