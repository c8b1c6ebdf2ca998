/**
 * applyTransitions against a real store (both engines): the conditional move, the misses it reports, the
 * events and the exact counters, on a bulk action of 1,000 mails in mixed statuses.
 */
import { MailStatus, REQUEUEABLE_STATUSES, STATUSES } from '@outbox/contract';
import type { KyselyPlugin, Transaction } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listMailApplicationEvents } from '../../src/events/application-events.repository.js';
import { acceptedCreation, deleteTransition, requeueTransition } from '../../src/mail/lifecycle.js';
import { getStatusCounts } from '../../src/mail/mail.repository.js';
import { prepareJson } from '../../src/submission/submission-preparation.js';
import { applyTransitions } from '../../src/mail/write/apply.js';
import { insertMails } from '../../src/mail/write/create.js';
import type { Database } from '../../src/store/schema.js';
import { createTestContext, getMailDetail, loginAs, testEngine, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';

let context: TestContext;

beforeEach(async () => {
  context = await createTestContext();
});

afterEach(async () => {
  await context.close();
});

/** The counters must always equal a fresh count of the rows. */
async function expectCountersExact(): Promise<void> {
  // As they show: a stored Queued mail under a lease is Processing (mail/leases.ts).
  const rows = await context.store.db
    .selectFrom('mails')
    .leftJoin('mail_queue', 'mail_queue.mail_id', 'mails.id')
    .select(['mails.status', 'mail_queue.lease_owner'])
    .execute();
  const actual = new Map<number, number>();
  for (const r of rows) {
    const status = r.status === MailStatus.Queued && r.lease_owner !== null ? MailStatus.Processing : r.status;
    actual.set(status, (actual.get(status) ?? 0) + 1);
  }
  const counters = await getStatusCounts(context.store.db);
  for (const { code } of STATUSES) expect(counters.get(code) ?? 0, `status ${code}`).toBe(actual.get(code) ?? 0);
}

describe('applyTransitions', () => {
  it('requeues 1,000 mails in mixed statuses: allowed ones move with their own from-status, the rest are reported missed', async () => {
    const statuses = Array.from({ length: 1000 }, (_, i) => STATUSES[i % STATUSES.length]!.code);
    const ids = await seedMails(
      context.store,
      statuses.map((status) => ({ status })),
    );
    const missing = [10_000_001, 10_000_002];
    const at = context.clock.now();
    const result = await context.store.db.transaction().execute((trx) =>
      applyTransitions(
        trx,
        [...ids, ...missing].map((id) => requeueTransition(id, at, 'operator:ops')),
      ),
    );

    const requeueable = ids.filter((_, i) => (REQUEUEABLE_STATUSES as readonly number[]).includes(statuses[i]!));
    expect(result.moved.map((m) => m.id)).toEqual(requeueable);
    expect(result.missed).toEqual([...ids.filter((id) => !requeueable.includes(id)), ...missing]);
    expect(result.moved.every((m, i) => m.from === statuses[ids.indexOf(requeueable[i]!)] && m.to === MailStatus.Queued)).toBe(true);

    const events = await context.store.db.selectFrom('mail_events').selectAll().where('type', '=', 'requeued').execute();
    expect(events).toHaveLength(requeueable.length);
    const firstError = ids[statuses.indexOf(MailStatus.Error)]!;
    expect(events.find((e) => e.mail_id === firstError)).toMatchObject({
      actor: 'operator:ops',
      from_status: MailStatus.Error,
      to_status: MailStatus.Queued,
    });
    const row = await context.store.db.selectFrom('mails').selectAll().where('id', '=', firstError).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: MailStatus.Queued, next_attempt_at: at, attempts: 0, last_update_at: at });
    await expectCountersExact();
  });

  it('a second application of the same moves misses them all and changes nothing', async () => {
    const ids = await seedMails(context.store, [{ status: MailStatus.Error }, { status: MailStatus.Dequeued }]);
    const apply = () =>
      context.store.db.transaction().execute((trx) =>
        applyTransitions(
          trx,
          ids.map((id) => requeueTransition(id, context.clock.now(), 'operator:ops')),
        ),
      );
    expect((await apply()).moved).toHaveLength(2);
    const again = await apply();
    expect(again.moved).toEqual([]);
    expect(again.missed).toEqual(ids);
    await expectCountersExact();
  });

  it('deletes only from the allowed statuses and returns the rows as they were', async () => {
    const ids = await seedMails(context.store, [
      { status: MailStatus.ProviderSent, subject: 'done' },
      { status: MailStatus.Queued },
      { status: MailStatus.Processing },
    ]);
    const result = await context.store.db.transaction().execute((trx) =>
      applyTransitions(
        trx,
        ids.map((id) => deleteTransition(id)),
        { returnRows: true },
      ),
    );
    expect(result.moved).toEqual([{ id: ids[0], from: MailStatus.ProviderSent, to: 'deleted' }]);
    expect(result.missed).toEqual(ids.slice(1));
    expect(result.rows.get(ids[0]!)).toMatchObject({ subject: 'done', status: MailStatus.ProviderSent });
    await expectCountersExact();
  });

  it('a leased mail: a move that keeps it Processing leaves its lease; a dequeue misses it; the outcome under its lease ends it and removes its queue row', async () => {
    const [leased] = await seedMails(context.store, [{ status: MailStatus.Processing }]);
    const lease = await context.store.db.selectFrom('mail_queue').selectAll().where('mail_id', '=', leased!).executeTakeFirstOrThrow();
    const at = context.clock.now();
    // A bounce report's event while its retry is under way (bounces/bounce.service.ts): Processing stays Processing.
    const stay = await applyTransitions(context.store.db, [
      { id: leased!, from: [MailStatus.Processing], to: MailStatus.Processing, at, event: { type: 'bounce-delayed', actor: 'bounce' } },
    ]);
    expect(stay.moved).toEqual([{ id: leased!, from: MailStatus.Processing, to: MailStatus.Processing }]);
    expect(await context.store.db.selectFrom('mail_queue').selectAll().where('mail_id', '=', leased!).executeTakeFirstOrThrow()).toEqual(
      lease,
    );
    // An operator's dequeue of a leased mail misses: the claim won.
    const dequeue = await applyTransitions(context.store.db, [
      { id: leased!, from: [MailStatus.Queued], to: MailStatus.Dequeued, at, event: { type: 'dequeued', actor: 'operator:ops' } },
    ]);
    expect(dequeue.missed).toEqual([leased]);
    // Its outcome, under the lease it names: ProviderSent, the queue row gone, the attempt the claim counted kept.
    const sent = await applyTransitions(context.store.db, [
      {
        id: leased!,
        from: [MailStatus.Processing],
        to: MailStatus.ProviderSent,
        at,
        event: { type: 'sent', actor: 'worker:seed' },
        set: { providerReply: '250 ok', providerSentAt: at, lease: null },
        lease: { owner: 'seed', expiresAt: Number(lease.lease_expires_at) },
      },
    ]);
    expect(sent.missed).toEqual([]);
    expect(await context.store.db.selectFrom('mail_queue').selectAll().where('mail_id', '=', leased!).execute()).toEqual([]);
    expect(
      await context.store.db.selectFrom('mails').select(['status', 'attempts']).where('id', '=', leased!).executeTakeFirstOrThrow(),
    ).toEqual({
      status: MailStatus.ProviderSent,
      attempts: 1,
    });
    await expectCountersExact();
  });

  it('refuses duplicate ids rather than counting a mail twice', async () => {
    const [id] = await seedMails(context.store, [{ status: MailStatus.Error }]);
    const at = context.clock.now();
    await expect(
      context.store.db
        .transaction()
        .execute((trx) => applyTransitions(trx, [requeueTransition(id!, at, 'a'), requeueTransition(id!, at, 'b')])),
    ).rejects.toThrow(/duplicate/);
    await expectCountersExact();
  });
});

describe('insertMails', () => {
  /** Counts the statements sent on a transaction (a plugin sees every result the store hands back). */
  function countingStatements(trx: Transaction<Database>): { trx: Transaction<Database>; count: () => number } {
    let statements = 0;
    const plugin: KyselyPlugin = {
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        statements += 1;
        return result;
      },
    };
    return { trx: trx.withPlugin(plugin), count: () => statements };
  }

  it('writes a group of new mails in one statement on PostgreSQL once their ids are drawn (issue 25), one per table on SQLite', async () => {
    const principal = (await context.services.auth.findApiKeyPrincipal(await context.services.auth.createApiKey('shop')))!;
    const at = context.clock.now();
    const inputs = [0, 1, 2].map((i) => ({
      fromMail: 'shop@example.com',
      to: [{ recipientMail: `r${i}@example.com` }],
      subject: `s${i}`,
      text: 'hi',
    }));
    const prepared = inputs.map((input, i) => prepareJson(principal, input, i, at));
    let statements = 0;
    const ids = await context.store.db.transaction().execute(async (trx) => {
      const counted = countingStatements(trx);
      const inserted = await insertMails(
        counted.trx,
        prepared.map((p) => ({ ...p.mail, created: acceptedCreation(at, 'api-key:shop') })),
      );
      statements = counted.count();
      return inserted;
    });
    // PostgreSQL: the ids and key names, then mails, queue rows, recipients, contents, events, application events
    // and the counter together, then the hourly statistics alone (after the counter: the lock order of
    // statistics.repository.ts). SQLite: the same eight writes, each its own statement (no round trip to save).
    expect(statements).toBe(testEngine === 'postgres' ? 3 : 8);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    for (const [i, id] of ids.entries()) {
      const detail = await getMailDetail(context, await loginAs(context), id);
      expect(detail).toMatchObject({ subject: `s${i}`, envelopeTo: [`r${i}@example.com`], status: MailStatus.Queued });
      expect(detail.events.map((e) => e.type)).toEqual(['accepted']);
      const events = await listMailApplicationEvents(context.store.db, id);
      expect(events.map((e) => [e.type, Number(e.mail_seq)])).toEqual([['mail.queued', 1]]);
      expect(JSON.parse(events[0]!.payload)).toMatchObject({ mailId: id, application: 'shop' });
    }
    await expectCountersExact();
  });

  it('moves two counters in status order, outside the one statement, when a group creates mails in two statuses', async () => {
    const [first, second] = await seedMails(context.store, [{ status: MailStatus.Queued }, { status: MailStatus.Error }]);
    expect(second).toBeGreaterThan(first!);
    await expectCountersExact();
  });
});
