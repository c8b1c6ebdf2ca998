/**
 * Migration 029 (relays, relay_credentials, routes) goes down and up again on either engine: the tables are gone
 * after `down` and usable after `up`, so an operator can step back a release.
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
