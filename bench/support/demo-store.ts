/** The kept 1M-mail (or any size) demo store of the list and console benchmarks. */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { insertDemoMails } from '../../server/src/demo/demo-data.js';
import { getStatusCounts } from '../../server/src/mail/mail.repository.js';
import { openStore } from '../../server/src/store/connection.js';
import { formatNumber, resultsDir } from './common.js';
import type { Engine } from './outbox.js';
import { dropDatabase, namedDatabase, postgresAdminUrl, postgresReachable } from './postgres.js';

export interface DemoStoreOptions {
  engine: Engine;
  count: number;
  /** Appended to the kept store's name: worktrees sharing one PostgreSQL server (each with its own migrations) must not share a store. */
  tag?: string | undefined;
  /** Rebuild it. */
  fresh?: boolean | undefined;
  /** Remove it in cleanup(). */
  drop?: boolean | undefined;
}

/**
 * A store holding exactly `count` demo mails (`insertDemoMails`, the `demo --count N` data): reused when a
 * previous run left one, filled otherwise. Kept as bench/results/cache/list-<engine>-<count>[_tag]/ or the
 * PostgreSQL database bench_list_<count>[_tag], shared by bench/list.ts and bench/console-latency.ts.
 */
export async function prepareDemoStore({ engine, count, tag, fresh = false, drop = false }: DemoStoreOptions): Promise<{
  dataDir: string;
  databaseUrl: string | undefined;
  filledSeconds: number | undefined;
  cleanup(): Promise<void>;
}> {
  const storeTag = tag ? `_${tag.replace(/[^a-z0-9_]/gi, '').toLowerCase()}` : '';
  const dataDir = path.join(resultsDir, 'cache', `list-${engine}-${count}${storeTag}`);
  let databaseUrl: string | undefined;
  let dropFilled: (() => Promise<void>) | undefined;
  if (engine === 'postgres') {
    if (!(await postgresReachable()))
      throw new Error(`--engine postgres: no PostgreSQL answers at ${new URL(postgresAdminUrl).host} (set OUTBOX_BENCH_POSTGRES_URL)`);
    const name = `bench_list_${count}${storeTag}`;
    if (fresh) await dropDatabase(name);
    const database = await namedDatabase(name);
    databaseUrl = database.url;
    dropFilled = database.drop;
  } else if (fresh) {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const store = await openStore({ dataDir, databaseUrl });
  let filledSeconds: number | undefined;
  try {
    const have = [...(await getStatusCounts(store.db)).values()].reduce((sum, n) => sum + n, 0);
    if (have !== count) {
      if (have > 0) throw new Error(`the cached store holds ${have} mails, not ${count}; run with --fresh`);
      console.log(`filling the store with ${formatNumber(count)} demo mails (kept for later runs; --fresh rebuilds)...`);
      const started = performance.now();
      let lastReport = started;
      await insertDemoMails(store, {
        count,
        now: Date.now(),
        batchSize: 5000,
        onProgress: (inserted) => {
          if (performance.now() - lastReport > 5000) {
            lastReport = performance.now();
            console.log(`  ${formatNumber(inserted)} / ${formatNumber(count)}`);
          }
        },
      });
      // Fresh statistics, as a database that grew over time would have; on PostgreSQL also a vacuum (below).
      await sql`analyze`.execute(store.db);
      filledSeconds = (performance.now() - started) / 1000;
      console.log(`  filled in ${filledSeconds.toFixed(1)} s`);
    }
    if (engine === 'postgres') {
      // The fill moves every mail through its transitions: ~1.8M dead row versions at 1M mails, and no page
      // marked all-visible, so index-only scans (the date range's count, the status walks) read the heap
      // and the bitmap scans wade through dead rows: `last 24 h` took 600 ms instead of 10. A live database
      // has autovacuum; this server may not (autovacuum off here), and the figures must not depend on when it
      // ran. A vacuum of an already vacuumed table skips its all-visible pages: cheap on reuse. openStore
      // has just run any new migration, hence the analyze on reuse too.
      await sql`vacuum (analyze) mails`.execute(store.db);
      await sql`vacuum (analyze) mail_recipients`.execute(store.db);
    }
  } finally {
    await store.close();
  }
  return {
    dataDir,
    databaseUrl,
    filledSeconds,
    async cleanup() {
      if (!drop) return;
      fs.rmSync(dataDir, { recursive: true, force: true });
      await dropFilled?.();
    },
  };
}

/**
 * Reads the kept store once, so the run measures the server and the browser, not the disk. This machine's
 * kernel drops the page cache within minutes (21 of 23 GiB free right after a 1 GB SQLite file was written):
 * the first search for a new word then read its postings from the disk, 36–90 ms instead of 10–19 ms, and
 * every round of bench/console-latency.ts asks a word not asked before. A server whose store fits in memory
 * holds it there; `--cold` skips this to measure the other case.
 */
export async function warmDemoStore(engine: Engine, dataDir: string, databaseUrl: string | undefined): Promise<void> {
  const started = performance.now();
  if (engine === 'sqlite') {
    const chunk = Buffer.alloc(8 * 1024 * 1024);
    for (const name of fs.readdirSync(dataDir).filter((file) => file.startsWith('outbox.sqlite'))) {
      const handle = fs.openSync(path.join(dataDir, name), 'r');
      try {
        while (fs.readSync(handle, chunk, 0, chunk.length, null) > 0) {
          // read through: the kernel keeps the pages
        }
      } finally {
        fs.closeSync(handle);
      }
    }
  } else {
    const store = await openStore({ dataDir, databaseUrl, migrate: false });
    try {
      // pg_prewarm in 'read' mode: every table and index of the store through the kernel's page cache.
      await sql`create extension if not exists pg_prewarm`.execute(store.db);
      await sql`select pg_prewarm(c.oid::regclass, 'read') from pg_class c
        where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'i', 't', 'm')`.execute(store.db);
    } finally {
      await store.close();
    }
  }
  console.log(`store read into the page cache in ${((performance.now() - started) / 1000).toFixed(1)} s (--cold skips this)`);
}
