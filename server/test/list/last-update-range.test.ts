/**
 * A date range sorted by last update: the list's seek starts (ascending) or ends (descending) at `receivedFrom`
 * in last-update order (list.repository.ts `readSeek`). That is exact because no mail's last update precedes its
 * receipt (migration 017), which every writer keeps: insertMails, the claims, applyTransitions and the import.
 */
import { MailStatus } from '@outbox/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDueMails } from '../../src/delivery/delivery.repository.js';
import { DEFAULT_LIST_OPTIONS, type ListOptions } from '../../src/list/list-plan.js';
import { dequeueTransition } from '../../src/mail/lifecycle.js';
import { applyTransitions } from '../../src/mail/write/apply.js';
import { mailImportWriter } from '../../src/mail/write/import.js';
import { createTestContext, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';

const T0 = Date.parse('2026-11-20T00:00:00Z');
const minute = (m: number) => T0 + m * 60_000;

let context: TestContext;

beforeAll(async () => {
  context = await createTestContext();
});
afterAll(() => context.close());

async function lastUpdateOf(id: number): Promise<number> {
  const row = await context.store.db.selectFrom('mails').select('last_update_at').where('id', '=', id).executeTakeFirstOrThrow();
  return Number(row.last_update_at);
}

/**
 * Every page of a list sorted by last update, from page 1 along `nextCursor` (`limit` 7): the ids in order and the
 * plans that read them. Stops past `most` ids, so a cursor that loops fails the comparison instead of hanging.
 */
async function readEveryPage(
  input: { order: 'asc' | 'desc'; receivedFrom: number; statuses?: number[] | undefined },
  options: ListOptions,
  most: number,
): Promise<{ ids: number[]; plans: Set<string> }> {
  const ids: number[] = [];
  const plans = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await context.services.mails.listMails(
      { sort: 'lastUpdate', ...input, receivedFrom: new Date(input.receivedFrom).toISOString(), limit: 7, cursor },
      options,
    );
    ids.push(...page.data.map((m) => m.id));
    if (page.plan) plans.add(page.plan);
    cursor = page.meta.nextCursor ?? undefined;
  } while (cursor && ids.length <= most);
  return { ids, plans };
}

describe('no mail is updated before its receipt', () => {
  it('a transition or a claim dated before the receipt (a clock stepped back) writes the receipt', async () => {
    const [dequeued, claimed] = await seedMails(context.store, [
      { status: MailStatus.Queued, receivedAt: minute(500) },
      { status: MailStatus.Queued, receivedAt: minute(501) },
    ]);
    await applyTransitions(context.store.db, [dequeueTransition(dequeued!, minute(400), 'operator:test')]);
    expect(await lastUpdateOf(dequeued!)).toBe(minute(500));

    // Due now: the claim's clock reads an hour before the mail arrived.
    await sql`update mail_queue set due_at = 0 where mail_id = ${claimed}`.execute(context.store.db);
    const rows = await claimDueMails(context.store.db, context.store.engine, {
      now: minute(441),
      limit: 10,
      owner: 'test',
      leaseExpiresAt: minute(442),
    });
    expect(rows.map((r) => r.id)).toEqual([claimed]);
    expect(await lastUpdateOf(claimed!)).toBe(minute(501));
    await context.reset();
  });

  it('an imported mail changed before its receipt is moved to the receipt', async () => {
    const row = (id: number, received: number, updated: number) => ({
      id,
      message_id: `<m${id}@test>`,
      from_name: 'S',
      from_mail: 's@example.com',
      subject: `Imported ${id}`,
      status: MailStatus.ProviderSent,
      search_text: `s s@example.com imported ${id}`,
      first_to_mail: '',
      received_at: received,
      last_update_at: updated,
      provider_sent_at: updated,
      next_attempt_at: received,
      attempts: 1,
      lease_owner: null,
      lease_expires_at: null,
      provider_reply: null,
      api_key_id: null,
      idempotency_key: null,
      recipient_count: 0,
      rejected_recipients: 0,
      event_seq: 0,
    });
    await context.store.db
      .transaction()
      .execute((trx) => mailImportWriter.insertMails(trx, [row(9001, minute(10), minute(5)), row(9002, minute(10), minute(12))]));
    expect(await lastUpdateOf(9001)).toBe(minute(10));
    expect(await lastUpdateOf(9002)).toBe(minute(12));
    await context.reset();
  });
});

describe('a date range sorted by last update', () => {
  it('pages in (last update, id) order through every plan, both orders, old mails updated since left out', async () => {
    // 60 mails, one a minute. Those received before minute 20 were all updated after it (they sort among the
    // range's mails but are outside it); minutes 20-39 were updated in the reverse order of their receipt;
    // 40-59 not since their receipt. Statuses repeat so that a status filter takes several seeks.
    const ids = await seedMails(
      context.store,
      Array.from({ length: 60 }, (_, i) => ({ status: [MailStatus.Queued, MailStatus.ProviderSent][i % 2]!, receivedAt: minute(i) })),
    );
    const updated = (i: number) => (i < 20 ? minute(70 + i) : i < 40 ? minute(100 - i) : minute(i));
    for (const [i, id] of ids.entries())
      await sql`update mails set last_update_at = ${updated(i)} where id = ${id}`.execute(context.store.db);

    const presets: ListOptions[] = [
      DEFAULT_LIST_OPTIONS,
      { countCap: 5, walkRows: 5_000, candidateRows: 0, walkMargin: 1, candidateWalkFactor: 2, lookUpFirstShare: 0.02 },
      { countCap: 5, walkRows: 3, candidateRows: 0, walkMargin: Infinity, candidateWalkFactor: 2, lookUpFirstShare: 0.02 },
      { countCap: 5, walkRows: 1, candidateRows: 0, walkMargin: Infinity, candidateWalkFactor: 2, lookUpFirstShare: 0.02 },
    ];
    for (const statuses of [undefined, [MailStatus.Queued, MailStatus.ProviderSent]])
      for (const options of presets)
        for (const order of ['asc', 'desc'] as const) {
          const expected = ids
            .map((id, i) => ({ id, i, at: updated(i) }))
            .filter((m) => m.i >= 20)
            .sort((a, b) => (a.at - b.at || a.id - b.id) * (order === 'asc' ? 1 : -1))
            .map((m) => m.id);
          const { ids: seen } = await readEveryPage({ order, receivedFrom: minute(20), statuses }, options, 60);
          expect(seen, `${order} ${JSON.stringify(options)} statuses=${String(statuses)}`).toEqual(expected);
        }
  });

  it('a range from a start without an end is walked either way, as a seek bounded there: a small share of the store is no reason to sort', async () => {
    // 300 mails, one a minute, each updated at its receipt; the range holds the last 30 (a tenth). A walk of 50
    // entries newest first passes the range's 30 and stops at its start; taken as a tenth of the entries passed,
    // the range made the walk look hopeless (8 rows wanted, 5 expected within the bound) and the page was sorted.
    const ids = await seedMails(
      context.store,
      Array.from({ length: 300 }, (_, i) => ({ status: [MailStatus.Queued, MailStatus.ProviderSent][i % 2]!, receivedAt: minute(i) })),
    );
    const options: ListOptions = {
      countCap: 5,
      walkRows: 50,
      candidateRows: 0,
      walkMargin: 1,
      candidateWalkFactor: 2,
      lookUpFirstShare: 0.02,
    };
    for (const order of ['asc', 'desc'] as const) {
      const expected = ids.slice(270);
      if (order === 'desc') expected.reverse();
      const { ids: seen, plans } = await readEveryPage({ order, receivedFrom: minute(270) }, options, 300);
      expect(seen, order).toEqual(expected);
      expect(plans, order).toEqual(new Set(['walk']));
    }
    // With an end the mails received after it are passed too, first when newest first: the range's share stands.
    const bounded = await context.services.mails.listMails(
      {
        sort: 'lastUpdate',
        order: 'desc',
        receivedFrom: new Date(minute(200)).toISOString(),
        receivedTo: new Date(minute(230)).toISOString(),
        limit: 7,
      },
      options,
    );
    expect(bounded.data.map((m) => m.id)).toEqual(ids.slice(223, 230).reverse());
    expect(bounded.plan).toBe('sort');
    await context.reset();
  });
});
