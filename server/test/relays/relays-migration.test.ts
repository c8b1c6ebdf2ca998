/**
 * Migrations 029 (relays, relay_credentials, routes) and 030 (relay_health) go down and up again on either engine: the
 * tables are gone after `down` and usable after `up`, so an operator can step back a release; a process's relay health
 * rows go with its heartbeat row.
 */
import { Migrator, sql } from 'kysely';
import { afterEach, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/connection.js';
import { migrateToLatest, migrations } from '../../src/store/migrate.js';
import { createTestDatabase, makeTempDir, testEngine } from '../support/context.js';

let store: Store | undefined;
let drop: (() => Promise<void>) | undefined;

afterEach(async () => {
  await store?.close();
  store = undefined;
  await drop?.();
  drop = undefined;
});

const tables = async (db: Store['db']) =>
  (testEngine === 'postgres'
    ? await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = 'public'`.execute(db)
    : await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)
  ).rows
    .map((r) => r.name)
    .filter((name) => ['relays', 'relay_credentials', 'routes'].includes(name))
    .sort();

it('029 creates relays, relay_credentials and routes, and takes them away again', async () => {
  const database = testEngine === 'postgres' ? await createTestDatabase({ empty: true }) : undefined;
  drop = database?.drop;
  store = await openStore({ dataDir: makeTempDir('outbox-migration-029-'), databaseUrl: database?.url, migrate: false });
  await migrateToLatest(store);
  expect(await tables(store.db)).toEqual(['relay_credentials', 'relays', 'routes']);
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations(store!) } });
  expect((await migrator.migrateTo('027-lanes')).error).toBeUndefined();
  expect(await tables(store.db)).toEqual([]);
  await migrateToLatest(store);
  const relay = await store.db
    .insertInto('relays')
    .values({
      name: 'eu',
      url: 'smtp://eu.example',
      tls: 'require',
      max_connections: 5,
      max_per_second: null,
      max_per_day: null,
      created_at: 1,
      updated_at: 1,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await store.db.insertInto('relay_credentials').values({ relay_id: relay.id, username: 'u', password: 'p' }).execute();
  await store.db
    .insertInto('routes')
    .values({
      position: 0,
      api_key_id: null,
      sender_domain: null,
      recipient_domain: '*.eu',
      lane: null,
      relay_ids: `[${relay.id}]`,
      created_at: 1,
    })
    .execute();
  expect(await store.db.selectFrom('routes').select('relay_ids').execute()).toEqual([{ relay_ids: `[${relay.id}]` }]);
});

it('030 creates relay_health, whose rows go with their instance, and takes it away again', async () => {
  const database = testEngine === 'postgres' ? await createTestDatabase({ empty: true }) : undefined;
  drop = database?.drop;
  store = await openStore({ dataDir: makeTempDir('outbox-migration-030-'), databaseUrl: database?.url, migrate: false });
  await migrateToLatest(store);
  const hasTable = async () =>
    (testEngine === 'postgres'
      ? await sql<{
          name: string;
        }>`select tablename as name from pg_tables where schemaname = 'public' and tablename = 'relay_health'`.execute(store!.db)
      : await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name = 'relay_health'`.execute(store!.db)
    ).rows.length === 1;
  expect(await hasTable()).toBe(true);
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations(store!) } });
  expect((await migrator.migrateTo('029-relays')).error).toBeUndefined();
  expect(await hasTable()).toBe(false);
  await migrateToLatest(store);
  const instance = (id: string) => ({
    id,
    host: 'h',
    pid: 1,
    version: 't',
    roles: 'worker',
    started_at: 1,
    last_heartbeat_at: 1,
    stale_after_ms: 15_000,
    in_flight: 0,
    delivered_last_minute: 0,
  });
  await store.db
    .insertInto('instances')
    .values([instance('a'), instance('b')])
    .execute();
  const row = (instanceId: string, relay: string) => ({
    instance_id: instanceId,
    relay,
    state: 'down',
    since: 1,
    rate_per_second: 2.5,
    max_per_second: 5,
    sent_today: 3,
    max_per_day: null,
    last_error: 'connect ECONNREFUSED',
    last_error_at: 1,
    latency_ms: 12.5,
    updated_at: 1,
  });
  await store.db
    .insertInto('relay_health')
    .values([row('a', 'default'), row('a', 'eu'), row('b', 'default')])
    .execute();
  await store.db.deleteFrom('instances').where('id', '=', 'a').execute();
  const left = await store.db.selectFrom('relay_health').select(['instance_id', 'relay', 'rate_per_second', 'latency_ms']).execute();
  expect(left.map((r) => ({ ...r, rate_per_second: Number(r.rate_per_second), latency_ms: Number(r.latency_ms) }))).toEqual([
    { instance_id: 'b', relay: 'default', rate_per_second: 2.5, latency_ms: 12.5 },
  ]);
  // A row for a process without a heartbeat row is refused.
  await expect(store.db.insertInto('relay_health').values(row('nobody', 'default')).execute()).rejects.toThrow();
});
