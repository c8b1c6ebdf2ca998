/**
 * Migration 021 on a store that has reports already (docs/operations.md#upgrading-a-large-store): the reports
 * whose mail is gone (left behind by deletes and purges before it) are deleted, the others are kept byte for
 * byte, and from then on a mail's delete takes its reports with it (the foreign key), on either engine.
 */
import { Migrator } from 'kysely';
import { sql } from 'kysely';
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

it('021 deletes the reports of mails already gone, keeps the others, and a deleted mail takes its reports', async () => {
  const dataDir = makeTempDir('outbox-migration-021-');
  const database = testEngine === 'postgres' ? await createTestDatabase({ empty: true }) : undefined;
  drop = database?.drop;
  store = await openStore({ dataDir, databaseUrl: database?.url, migrate: false });
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations(store!) } });
  const before = await migrator.migrateTo('019-search-punctuation-keys');
  expect(before.error).toBeUndefined();

  const db = store.db;
  const mail = async (id: number) =>
    sql`insert into mails (id, from_name, from_mail, subject, status, received_at, last_update_at, next_attempt_at, message_id, search_text)
        values (${id}, '', 'shop@example.com', 'Your order', 3, 1, 1, 1, ${`<${id}@example.com>`}, '')`.execute(db);
  await mail(1);
  await mail(2);
  const report = (mailId: number | null, raw: string) =>
    sql`insert into bounce_reports (received_at, envelope_from, envelope_to, kind, mail_id, matched_by, summary, raw)
        values (1, '', 'b@bounce.test', 'dsn', ${mailId}, ${mailId === null ? null : 'return-path'}, '{}', ${Buffer.from(raw)})`.execute(
      db,
    );
  await report(1, 'of mail 1');
  await report(2, 'of mail 2');
  await report(404, 'of a mail deleted before the migration');
  await report(null, 'unmatched');

  await migrateToLatest(store);
  const rows = await db.selectFrom('bounce_reports').select(['mail_id', 'raw']).orderBy('id').execute();
  expect(rows.map((r) => [r.mail_id === null ? null : Number(r.mail_id), Buffer.from(r.raw).toString()])).toEqual([
    [1, 'of mail 1'],
    [2, 'of mail 2'],
    [null, 'unmatched'],
  ]);

  // The foreign key: a mail deleted (as every delete does, through applyTransitions) takes its reports.
  await sql`delete from mails where id = 2`.execute(db);
  expect(
    (await db.selectFrom('bounce_reports').select('mail_id').orderBy('id').execute()).map((r) => r.mail_id && Number(r.mail_id)),
  ).toEqual([1, null]);
});
