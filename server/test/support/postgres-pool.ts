/**
 * The PostgreSQL databases of one test file. A store's database is cloned from the migrated template
 * (template.ts) the first time; when the test is done with it, it goes back to this file's pool, is emptied
 * there (every table truncated, the template's own rows such as status_counts put back, every sequence where
 * the template left it) and a later store of the file gets it again. That is one TRUNCATE, hidden behind the
 * next test, instead of CREATE + DROP DATABASE per test; DROP DATABASE forces a checkpoint of the whole
 * server, which took 0.6–2 s on a busy machine and slowed every other database on it. The pool is dropped by
 * the file's last hook (setup-postgres.ts).
 *
 * Before a database is emptied, connections a test left behind (a killed instance, a store not closed) are
 * ended. If emptying fails, the database is dropped and a new one cloned.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { ensurePostgresTemplate, postgresAdminUrl } from './template.js';

interface TemplateContents {
  tables: string[];
  rows: Array<{ table: string; json: string }>;
  sequences: Array<{ name: string; lastValue: number | null; isCalled: boolean }>;
}

interface Idle {
  name: string;
  /** True once `ready` has settled. */
  settled: boolean;
  /** Whether it was emptied (false: it was dropped instead). */
  ready: Promise<boolean>;
}

const idle: Idle[] = [];
const created = new Set<string>();
let contents: TemplateContents | undefined;

const urlOf = (name: string): string => {
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** What a fresh clone holds besides its schema; read from the first clone, before anyone wrote to it. */
async function readContents(client: pg.Client): Promise<TemplateContents> {
  const tables = (
    await client.query<{ name: string }>(
      `select tablename as name from pg_tables where schemaname = 'public' and tablename not like 'kysely\\_%' order by tablename`,
    )
  ).rows.map((r) => r.name);
  const rows: TemplateContents['rows'] = [];
  for (const table of tables) {
    const { rows: found } = await client.query<{ json: string | null }>(`select json_agg(t)::text as json from ${quote(table)} t`);
    if (found[0]?.json) rows.push({ table, json: found[0].json });
  }
  const sequences = (
    await client.query<{ name: string; last_value: string | null }>(
      `select quote_ident(schemaname) || '.' || quote_ident(sequencename) as name, last_value from pg_sequences where schemaname = 'public'`,
    )
  ).rows.map((r) => ({ name: r.name, lastValue: r.last_value === null ? null : Number(r.last_value), isCalled: r.last_value !== null }));
  return { tables, rows, sequences };
}

async function empty(name: string, template: TemplateContents): Promise<void> {
  await withClient(postgresAdminUrl, (admin) =>
    admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name]),
  );
  await withClient(urlOf(name), async (client) => {
    await client.query(`set lock_timeout = '5s'`);
    await client.query('begin');
    if (template.tables.length > 0) await client.query(`truncate ${template.tables.map(quote).join(', ')} restart identity cascade`);
    for (const { table, json } of template.rows)
      await client.query(`insert into ${quote(table)} select * from json_populate_recordset(null::${quote(table)}, $1::json)`, [json]);
    for (const sequence of template.sequences)
      if (sequence.lastValue !== null)
        await client.query('select setval($1::regclass, $2, $3)', [sequence.name, sequence.lastValue, sequence.isCalled]);
    await client.query('commit');
  });
}

async function dropDatabase(name: string): Promise<void> {
  await withClient(postgresAdminUrl, (admin) => admin.query(`drop database if exists ${name} with (force)`));
  created.delete(name);
}

/**
 * Whether a test database waits for its WAL to reach the disk at each commit. Off by default: with fsync on
 * and a busy disk, that wait was much of the PostgreSQL half's time, and no test crashes the PostgreSQL
 * server (a commit is lost with `off` only then; a test's killed connections or processes lose nothing).
 * OUTBOX_TEST_SYNCHRONOUS_COMMIT=on runs with PostgreSQL's default.
 */
const synchronousCommit = process.env.OUTBOX_TEST_SYNCHRONOUS_COMMIT === 'on' ? 'on' : 'off';

async function cloneTemplate(empty: boolean): Promise<string> {
  const name = `outbox_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  const template = empty ? undefined : await ensurePostgresTemplate(postgresAdminUrl);
  await withClient(postgresAdminUrl, async (admin) => {
    await admin.query(template ? `create database ${name} template ${template}` : `create database ${name}`);
    // A database's settings are not copied from its template: set on each clone, for every later connection.
    await admin.query(`alter database ${name} set synchronous_commit = ${synchronousCommit}`);
  });
  created.add(name);
  return name;
}

export interface TestDatabase {
  url: string;
  /** Hands the database back: to the pool (a clone of the template), or dropped (an empty one). */
  release(): Promise<void>;
}

export async function acquireTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  if (options.empty) {
    const name = await cloneTemplate(true);
    return { url: urlOf(name), release: () => dropDatabase(name) };
  }
  const acquired = await takeOrClone();
  let released = false;
  return {
    url: urlOf(acquired),
    async release() {
      if (released) return;
      released = true;
      // Emptied in the background while the next test runs on another of the file's databases.
      const entry: Idle = { name: acquired, settled: false, ready: Promise.resolve(false) };
      entry.ready = empty(acquired, contents!)
        .then(
          () => true,
          async (error: unknown) => {
            process.emitWarning(`Could not empty test database ${acquired} (${(error as Error).message}); dropping it`);
            await dropDatabase(acquired).catch(() => undefined);
            return false;
          },
        )
        .finally(() => (entry.settled = true));
      idle.push(entry);
    },
  };
}

/**
 * An emptied database of this file, else a new clone while there are fewer than two (one in use, one being
 * emptied), else the next one to finish emptying: a test file that makes a store per test alternates between
 * two databases, and the emptying of one is hidden behind the test that runs on the other.
 */
async function takeOrClone(): Promise<string> {
  for (;;) {
    const done = idle.findIndex((entry) => entry.settled);
    const next = done >= 0 ? idle.splice(done, 1)[0] : idle.length === 0 || created.size < 2 ? undefined : idle.shift();
    if (!next) break;
    if (await next.ready) return next.name;
  }
  const name = await cloneTemplate(false);
  contents ??= await withClient(urlOf(name), readContents);
  return name;
}

/** Drops every database this process created (the file's last hook). */
export async function dropTestDatabases(): Promise<void> {
  await Promise.all(idle.splice(0).map((entry) => entry.ready));
  for (const name of [...created]) await dropDatabase(name);
}
