/**
 * applyTransitions against a real store (both engines): the conditional move, the misses it reports, the
 * events and the exact counters, on a bulk action of 1,000 mails in mixed statuses.
 */
import { MailStatus, REQUEUEABLE_STATUSES, STATUSES } from '@outbox/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteTransition, requeueTransition } from '../../src/mail/lifecycle.js';
import { getStatusCounts } from '../../src/mail/mail.repository.js';
import { applyTransitions } from '../../src/mail/transition.repository.js';
import { createTestContext, type TestContext } from '../support/context.js';
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
  const rows = await context.store.db
    .selectFrom('mails')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('status')
    .execute();
  const actual = new Map(rows.map((r) => [r.status, Number(r.n)]));
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
