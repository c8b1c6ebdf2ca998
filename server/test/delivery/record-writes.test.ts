/**
 * The queue apart from the record (migration 022), counted by PostgreSQL itself: a claim writes only
 * `mail_queue`, so a mail delivered at its first attempt updates its `mails` row once after intake (its outcome),
 * and an application event nobody subscribes to costs its insert and nothing more. The row-version counters
 * (`pg_stat_user_tables`) are PostgreSQL's own; SQLite keeps none, so the SQLite half leaves this file out
 * (vitest.config.ts).
 */
import { MailStatus, type SubmitMailRequest } from '@outbox/contract';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestContext } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { createWorkerHarness, type WorkerHarness } from '../support/worker-harness.js';

let harness: WorkerHarness;
let context: TestContext;

beforeEach(async () => {
  harness = await createWorkerHarness();
  ({ context } = harness);
});

afterEach(() => harness.close());

interface TableWrites {
  inserts: number;
  updates: number;
  hotUpdates: number;
}

/**
 * Each table's row-version counters. A backend sends its counts to the shared statistics at most once a second
 * (or after 10 s idle): every pooled connection is first told to flush at its next transaction's end, each held by
 * a sleep so that the pool hands out every connection once.
 */
async function tableWrites(): Promise<Map<string, TableWrites>> {
  await Promise.all(Array.from({ length: 12 }, () => sql`select pg_stat_force_next_flush(), pg_sleep(0.1)`.execute(context.store.db)));
  const { rows } = await sql<{ relname: string; ins: string; upd: string; hot: string }>`
    select relname, n_tup_ins as ins, n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables`.execute(context.store.db);
  return new Map(rows.map((r) => [r.relname, { inserts: Number(r.ins), updates: Number(r.upd), hotUpdates: Number(r.hot) }]));
}

const delta = (after: Map<string, TableWrites>, before: Map<string, TableWrites>, table: string): TableWrites => ({
  inserts: (after.get(table)?.inserts ?? 0) - (before.get(table)?.inserts ?? 0),
  updates: (after.get(table)?.updates ?? 0) - (before.get(table)?.updates ?? 0),
  hotUpdates: (after.get(table)?.hotUpdates ?? 0) - (before.get(table)?.hotUpdates ?? 0),
});

describe('one write of the mail record per outcome (PostgreSQL row-version counters)', () => {
  it('1,000 mails delivered at their first attempt: one update of mails each, the claims in mail_queue, no update of application_events without an endpoint', async () => {
    const total = 1_000;
    const request = (i: number): SubmitMailRequest => ({
      fromName: 'Shop',
      fromMail: 'shop@example.com',
      to: [{ recipientName: 'Ann', recipientMail: `ann${i}@example.net` }],
      subject: `Order ${i}`,
      text: 'Hi',
    });
    for (let start = 0; start < total; start += 250)
      await context.services.submissions.submitJson(
        harness.principal,
        Array.from({ length: 250 }, (_, i) => request(start + i)),
        true,
      );
    const before = await tableWrites();

    const worker = harness.startWorker({ concurrency: 50 });
    const sent = async () =>
      Number(
        (
          await context.store.db
            .selectFrom('mails')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('status', '=', MailStatus.ProviderSent)
            .executeTakeFirstOrThrow()
        ).n,
      );
    await waitUntil(async () => (await sent()) === total, { timeoutMs: 120_000, what: 'every mail ProviderSent' });
    await worker.stop();
    const after = await tableWrites();

    const mails = delta(after, before, 'mails');
    const queue = delta(after, before, 'mail_queue');
    const events = delta(after, before, 'application_events');
    const search = delta(after, before, 'mail_search');
    // Two updates per mail (a claim and an outcome) fail this: the claim writes the queue only.
    expect(mails.updates, JSON.stringify({ mails, queue, events })).toBe(total);
    expect(queue.updates).toBeGreaterThanOrEqual(total);
    // The mail's `mail.sent` event is inserted with its outcome, and nothing updates it: no endpoint subscribes.
    expect(events.inserts).toBe(total);
    expect(events.updates).toBe(0);
    // The search's trigrams are written at intake, apart from the record (migration 031): a delivery writes none,
    // and no trigram index of `mails` takes ~100 entries per update.
    expect(search).toEqual({ inserts: 0, updates: 0, hotUpdates: 0 });
    const { rows: ginOfMails } = await sql<{ indexname: string }>`
      select indexname from pg_indexes where tablename = 'mails' and indexdef like '% USING gin %'`.execute(context.store.db);
    expect(ginOfMails).toEqual([]);
    // A deadline past the wait's own: 1,000 deliveries took 65 s beside a second full suite (load 20).
  }, 180_000);
});
