/**
 * Migration 022 on a store made by the schema before it (docs/operations.md#upgrading-a-large-store): mails in every
 * status, a live lease and one that ran out. Afterwards every mail shows the status it had, the counters are exact,
 * the live lease is still its holder's (nothing is handed to another worker early), and a worker started on the
 * upgraded store sends each waiting mail once, the leased ones once their lease is released: nothing lost, nothing
 * sent twice. On either engine.
 */
import { MailStatus, STATUSES } from '@outbox/contract';
import { Migrator, sql } from 'kysely';
import { afterEach, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { createRelayTransport } from '../../src/delivery/relay-transport.js';
import { createRetryPolicy } from '../../src/delivery/retry-policy.js';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/delivery/worker.js';
import { getStatusCounts } from '../../src/mail/mail.repository.js';
import { findStatuses } from '../../src/mail/write/apply.js';
import { openStore, type Store } from '../../src/store/connection.js';
import { migrateToLatest, migrations } from '../../src/store/migrate.js';
import { createTestDatabase, makeTempDir, testEngine } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let store: Store | undefined;
let drop: (() => Promise<void>) | undefined;
let relay: TestRelay | undefined;
let worker: DeliveryWorker | undefined;

afterEach(async () => {
  await worker?.stop({ graceMs: 0 });
  worker = undefined;
  await relay?.close();
  relay = undefined;
  await store?.close();
  store = undefined;
  await drop?.();
  drop = undefined;
});

interface OldMail {
  id: number;
  status: number;
  nextAttemptAt: number;
  attempts: number;
  lease?: { owner: string; expiresAt: number };
}

it('022 moves Queued and Processing mails into the queue with their leases; every status, counter and send is as it was', async () => {
  const dataDir = makeTempDir('outbox-migration-022-');
  const database = testEngine === 'postgres' ? await createTestDatabase({ empty: true }) : undefined;
  drop = database?.drop;
  store = await openStore({ dataDir, databaseUrl: database?.url, migrate: false });
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations(store!) } });
  expect((await migrator.migrateTo('021-bounce-reports-with-mail')).error).toBeUndefined();

  const now = Date.now();
  const old: OldMail[] = [
    { id: 1, status: MailStatus.Queued, nextAttemptAt: now - 1_000, attempts: 0 },
    { id: 2, status: MailStatus.Queued, nextAttemptAt: now - 500, attempts: 1 },
    // Waiting for a retry an hour from now: stays Queued.
    { id: 3, status: MailStatus.Queued, nextAttemptAt: now + 3_600_000, attempts: 1 },
    { id: 4, status: MailStatus.Dequeued, nextAttemptAt: now, attempts: 0 },
    // Held by a worker of the old release that is gone: its lease runs out 3 s from now.
    {
      id: 5,
      status: MailStatus.Processing,
      nextAttemptAt: now - 2_000,
      attempts: 1,
      lease: { owner: 'old-worker', expiresAt: now + 3_000 },
    },
    // A lease that ran out already: the sweeper's at once.
    {
      id: 6,
      status: MailStatus.Processing,
      nextAttemptAt: now - 9_000,
      attempts: 2,
      lease: { owner: 'old-worker', expiresAt: now - 1_000 },
    },
    { id: 7, status: MailStatus.ProviderSent, nextAttemptAt: now, attempts: 1 },
    { id: 8, status: MailStatus.ProviderError, nextAttemptAt: now, attempts: 3 },
    { id: 9, status: MailStatus.Error, nextAttemptAt: now, attempts: 8 },
  ];
  const db = store.db;
  for (const m of old) {
    await sql`insert into mails (id, message_id, from_name, from_mail, subject, status, search_text, received_at, last_update_at,
        provider_sent_at, next_attempt_at, attempts, lease_owner, lease_expires_at, recipient_count)
      values (${m.id}, ${`<m${m.id}@upgrade.test>`}, 'Shop', 'shop@example.com', ${`Order ${m.id}`}, ${m.status}, '', ${now - 60_000},
        ${now - 30_000}, ${m.status === MailStatus.ProviderSent ? now - 30_000 : 0}, ${m.nextAttemptAt}, ${m.attempts},
        ${m.lease?.owner ?? null}, ${m.lease?.expiresAt ?? null}, 1)`.execute(db);
    await sql`insert into mail_recipients (mail_id, kind, position, name, address, outcome)
      values (${m.id}, 'envelope', 0, '', ${`r${m.id}@example.net`}, 'pending')`.execute(db);
    const raw = Buffer.from(
      `From: shop@example.com\r\nTo: r${m.id}@example.net\r\nSubject: Order ${m.id}\r\nMessage-ID: <m${m.id}@upgrade.test>\r\n\r\nHi\r\n`,
    );
    await sql`insert into mail_contents (mail_id, raw, envelope_from, size_bytes) values (${m.id}, ${raw}, 'shop@example.com', ${raw.length})`.execute(
      db,
    );
  }
  for (const { code } of STATUSES)
    await sql`update status_counts set count = ${old.filter((m) => m.status === code).length} where status = ${code}`.execute(db);

  await migrateToLatest(store);

  // Every mail shows the status it had; the counters agree; the stored status of a leased mail is Queued.
  const shown = await findStatuses(
    db,
    old.map((m) => m.id),
  );
  expect(old.map((m) => shown.get(m.id))).toEqual(old.map((m) => m.status));
  const counts = await getStatusCounts(db);
  for (const { code } of STATUSES) expect(counts.get(code) ?? 0, `status ${code}`).toBe(old.filter((m) => m.status === code).length);
  const stored = await db.selectFrom('mails').select(['id', 'status']).orderBy('id').execute();
  expect(stored.filter((m) => m.status === MailStatus.Processing)).toEqual([]);
  const queue = await db.selectFrom('mail_queue').selectAll().orderBy('mail_id').execute();
  expect(
    queue.map((q) => [
      Number(q.mail_id),
      Number(q.due_at),
      q.attempts,
      q.lease_owner,
      q.lease_expires_at === null ? null : Number(q.lease_expires_at),
    ]),
  ).toEqual(
    old
      .filter((m) => m.status === MailStatus.Queued || m.status === MailStatus.Processing)
      .map((m) => [m.id, m.nextAttemptAt, m.attempts, m.lease?.owner ?? null, m.lease?.expiresAt ?? null]),
  );

  // A worker of the new release on the upgraded store: the due mails once, the leased ones once their lease is released.
  relay = await startTestRelay();
  const transport = createRelayTransport(relay.url, { connectionTimeoutMs: 15_000, socketTimeoutMs: 15_000 });
  worker = createDeliveryWorker({
    store,
    clock: systemClock,
    transport,
    retryPolicy: createRetryPolicy({ maxAttempts: 5, baseDelayMs: 60_000, jitter: 0, maxAgeMs: 86_400_000 }),
    concurrency: 5,
    leaseMs: 60_000,
    pollIntervalMs: 20,
    sweepIntervalMs: 100,
    flushDelayMs: 1,
  });
  worker.start();
  const sentIds = [1, 2, 5, 6];
  await waitUntil(
    async () => {
      const statuses = await findStatuses(db, sentIds);
      return sentIds.every((id) => statuses.get(id) === MailStatus.ProviderSent);
    },
    { timeoutMs: 30_000, what: 'the waiting and the released mails ProviderSent' },
  );
  // The live lease was its holder's until it ran out: mail 5 went out no earlier.
  const received = relay.received.map((message) => message.messageId);
  expect([...received].sort()).toEqual(sentIds.map((id) => `<m${id}@upgrade.test>`).sort());
  const events = await db.selectFrom('mail_events').select(['mail_id', 'type', 'at']).where('mail_id', '=', 5).orderBy('id').execute();
  expect(events.map((e) => e.type)).toEqual(['lease-expired', 'sent']);
  expect(Number(events[0]!.at)).toBeGreaterThanOrEqual(now + 3_000);
  const after = await findStatuses(
    db,
    old.map((m) => m.id),
  );
  expect(old.filter((m) => !sentIds.includes(m.id)).map((m) => after.get(m.id))).toEqual(
    old.filter((m) => !sentIds.includes(m.id)).map((m) => m.status),
  );
  await transport.close();
}, 60_000);
