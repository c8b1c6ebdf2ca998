/**
 * PostgreSQL for benchmarks: the server at OUTBOX_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres)
 * when one answers, and a scratch database per run that is dropped afterwards.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import type { Database } from '../../server/src/store/schema.js';
import { cpuTimeMs } from './common.js';

export const postgresAdminUrl = process.env.OUTBOX_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** True when something accepts a TCP connection at the admin URL's host and port. */
export function postgresReachable(urlText = postgresAdminUrl): Promise<boolean> {
  const url = new URL(urlText);
  return new Promise((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || 5432) });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

async function adminQuery(text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: postgresAdminUrl });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

export interface ScratchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function urlFor(name: string): string {
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A fresh database named `outbox_bench_<label>_<random>`; drop() removes it. */
export async function createScratchDatabase(label: string): Promise<ScratchDatabase> {
  const name = `outbox_bench_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${crypto.randomBytes(3).toString('hex')}`;
  await adminQuery(`create database ${name}`);
  return { name, url: urlFor(name), drop: () => adminQuery(`drop database if exists ${name} with (force)`).then(() => undefined) };
}

/**
 * A copy of the database `from` (`create database … template …`: it must have no other connection meanwhile), for a
 * run that writes to a kept store without changing it; drop() removes the copy.
 */
export async function copyDatabase(from: string, label: string): Promise<ScratchDatabase> {
  const name = `outbox_bench_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${crypto.randomBytes(3).toString('hex')}`;
  await adminQuery(`create database ${name} template ${from.replace(/[^a-z0-9_]/gi, '')}`);
  return { name, url: urlFor(name), drop: () => adminQuery(`drop database if exists ${name} with (force)`).then(() => undefined) };
}

/** A database kept between runs under a fixed name (the list benchmark's filled store). */
export async function namedDatabase(name: string): Promise<{ url: string; existed: boolean; drop(): Promise<void> }> {
  const found = await adminQuery(`select 1 from pg_database where datname = '${name.replace(/'/g, "''")}'`);
  const existed = (found.rowCount ?? 0) > 0;
  if (!existed) await adminQuery(`create database ${name}`);
  return { url: urlFor(name), existed, drop: () => adminQuery(`drop database if exists ${name} with (force)`).then(() => undefined) };
}

export async function dropDatabase(name: string): Promise<void> {
  await adminQuery(`drop database if exists ${name} with (force)`);
}

/**
 * CPU time of the server processes serving one database (its backends, from /proc: the server must run on
 * this machine), from now until the returned function is called, in ms. A backend that starts meanwhile
 * counts from zero; one that ends meanwhile is missed (the pools here keep theirs for the run).
 */
export async function postgresBackendCpu(db: Kysely<Database>): Promise<() => Promise<number | undefined>> {
  const readAll = async () => {
    const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where datname = current_database()`.execute(db);
    return new Map(rows.map((row) => [row.pid, cpuTimeMs(row.pid)]));
  };
  const before = await readAll();
  return async () => {
    let total = 0;
    for (const [pid, ms] of await readAll()) {
      if (ms === undefined) return undefined;
      total += ms - (before.get(pid) ?? 0);
    }
    return total;
  };
}
