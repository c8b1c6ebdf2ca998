/**
 * Migration 022 (the queue apart from the record) on a large store: a store at migration 021 is
 * filled with `--count` mails in every status (1 % Queued, 0.1 % Processing under a live lease, the rest finished or
 * failed), then `migrateToLatest` is timed. Reports the wall time of the upgrade and the rows it moved; the figure
 * goes into docs/operations.md#upgrading-a-large-store.
 *
 *   npx tsx bench/upgrade-queue.ts [--count 1000000] [--engine sqlite|postgres|all]
 */
import { Migrator, sql, type Kysely } from 'kysely';
import { migrateToLatest, migrations } from '../server/src/store/migrate.js';
import type { Database } from '../server/src/store/schema.js';
import { describeSetup, formatNumber, printTable, setupLine, warnIfBusy, writeResult } from './support/common.js';
import { enginesOption, parseBenchArgs, resolveEngines, wholeNumberOption } from './support/options.js';
import { openScratchStore } from './support/scratch-store.js';

const { count, engine: engineChoice } = parseBenchArgs({
  count: wholeNumberOption(1_000_000),
  engine: enginesOption('all', ['sqlite', 'postgres', 'all']),
});
const engines = await resolveEngines(engineChoice, { withoutPostgres: 'skip' });

/**
 * `count` mails of the schema before 022, made by one INSERT … SELECT over a series: the status by the row's
 * number (every 100th Queued, every 1,000th Processing with a lease, …), the columns the migration reads filled.
 */
async function fill(db: Kysely<Database>, engine: 'sqlite' | 'postgres', now: number): Promise<void> {
  const series =
    engine === 'postgres'
      ? sql`select g as n from generate_series(1, ${count}) g`
      : sql`with recursive s(n) as (select 1 union all select n + 1 from s where n < ${count}) select n from s`;
  // Status by n: 0 Queued (1 %), 2 Processing (0.1 %), 1 Dequeued (0.5 %), 4 ProviderError (1 %), 5 Error (0.5 %), 3 sent.
  const status = sql`case when n % 1000 = 7 then 2 when n % 100 = 3 then 0 when n % 200 = 5 then 1 when n % 100 = 9 then 4
    when n % 200 = 11 then 5 else 3 end`;
  const at = sql`cast(${now} as bigint)`;
  const total = sql`cast(${count} as bigint)`;
  await sql`insert into mails (id, message_id, from_name, from_mail, subject, status, search_text, received_at, last_update_at,
      provider_sent_at, next_attempt_at, attempts, lease_owner, lease_expires_at, recipient_count)
    select n, '<' || n || '@upgrade.bench>', 'Shop', 'shop@example.com', 'Order ' || n, st, 'shop shop@example.com order ' || n,
      ${at} - (${total} - n) * 100, ${at} - (${total} - n) * 100 + 50,
      case when st = 3 then ${at} - (${total} - n) * 100 + 50 else 0 end, ${at} - (${total} - n) * 100, 1,
      case when st = 2 then 'old-worker' end, case when st = 2 then ${at} + 60000 end, 1
    from (select n, ${status} as st from (${series}) series) numbered`.execute(db);
  await sql`update status_counts set count = (select count(*) from mails m where m.status = status_counts.status)`.execute(db);
  if (engine === 'postgres') await sql`vacuum analyze mails`.execute(db);
  else await sql`analyze`.execute(db);
}

const rows: Array<Array<string | number>> = [];
const figures: Record<string, unknown> = {};
for (const engine of engines) {
  const scratch = await openScratchStore(engine, 'upgrade', { migrate: false });
  const { store } = scratch;
  try {
    const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations(store) } });
    const before = await migrator.migrateTo('021-bounce-reports-with-mail');
    if (before.error) throw before.error;
    const now = Date.now();
    const filling = performance.now();
    await fill(store.db, engine, now);
    const fillMs = performance.now() - filling;
    const started = performance.now();
    await migrateToLatest(store);
    const upgradeMs = performance.now() - started;
    const queued = await store.db
      .selectFrom('mail_queue')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const leased = await store.db
      .selectFrom('mail_queue')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('lease_owner', 'is not', null)
      .executeTakeFirstOrThrow();
    rows.push([
      engine,
      formatNumber(count),
      formatNumber(Number(queued.n)),
      formatNumber(Number(leased.n)),
      (fillMs / 1000).toFixed(1),
      (upgradeMs / 1000).toFixed(1),
    ]);
    figures[engine] = {
      count,
      queueRows: Number(queued.n),
      leases: Number(leased.n),
      fillSeconds: fillMs / 1000,
      upgradeSeconds: upgradeMs / 1000,
    };
  } finally {
    await scratch.close();
  }
}
const setup = describeSetup({ engine: engineChoice, count });
warnIfBusy(setup);
printTable(['engine', 'mails', 'queue rows', 'leases', 'fill s', 'migration 022 s'], rows);
console.log(setupLine(setup));
writeResult('upgrade-queue', setup, figures);
