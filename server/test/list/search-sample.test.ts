/**
 * The search sample (list/search-sample.ts) that tells the list which part of a search is rare enough to look
 * up in its trigram index (chooseTrigrams on SQLite, chooseIndexKeys on PostgreSQL; search-keys.ts): read in the
 * background, refreshed when stale, and never a reason for a search to miss a mail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MailStatus } from '@outbox/contract';
import { createSearchSample } from '../../src/list/search-sample.js';
import { deleteTransition } from '../../src/mail/lifecycle.js';
import { applyTransitions } from '../../src/mail/write/apply.js';
import { createTestContext, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';

let context: TestContext;

beforeAll(async () => {
  context = await createTestContext();
});
afterAll(() => context.close());

describe('the search sample', () => {
  it('reads nothing for an empty store, then the mails in the background once there are some', async () => {
    const sample = createSearchSample(context.store.db, { size: 50 });
    expect(sample.sharesFor(0)).toBeUndefined();
    await sample.settled();
    expect(sample.sharesFor(0)).toBeUndefined();

    await seedMails(
      context.store,
      Array.from({ length: 40 }, (_, i) => ({ subject: i % 4 === 0 ? `Zebra crossing ${i}` : `Plain ${i}` })),
    );
    // The first call starts the read and answers without it: a search never waits for the sample.
    expect(sample.sharesFor(40)).toBeUndefined();
    await sample.settled();
    const shares = sample.sharesFor(40)!;
    expect(shares.trigram('zeb')).toBe(10 / 40);
    expect(shares.trigram('pla')).toBe(30 / 40);
    expect(shares.trigram('sam')).toBe(1); // every sender is sam@example.com
    expect(shares.trigram('qqq')).toBe(0);
    expect(shares.text('zebra crossing')).toBe(10 / 40);
    expect(shares.text('plain 1')).toBe(9 / 40); // Plain 1, 10, 11, 13, 14, 15, 17, 18, 19
    expect(shares.text('@example.com')).toBe(1);
    expect(shares.text('no such text')).toBe(0);
    // Shorter than a trigram: every text is looked at.
    expect(shares.text('zz')).toBe(0);
    expect(shares.text('n ')).toBe(30 / 40); // every "Plain "
    // Every one of several texts (PostgreSQL's index keys): looked up through each one's trigrams.
    expect(shares.together(['zeb', 'cro'])).toBe(10 / 40);
    expect(shares.together(['zeb', 'pla'])).toBe(0);
    expect(shares.together(['pla', 'n 1'])).toBe(9 / 40);
    expect(shares.together(['zebra', 'sam@'])).toBe(10 / 40);
  });

  it('reads again when the store has grown by more than a quarter, or the sample is older than its age', async () => {
    let now = 0;
    const sample = createSearchSample(context.store.db, { size: 1_000, maxAgeMs: 60_000, now: () => now });
    sample.sharesFor(40);
    await sample.settled();
    expect(sample.sharesFor(40)!.trigram('yak')).toBe(0);

    await seedMails(
      context.store,
      Array.from({ length: 20 }, (_, i) => ({ subject: `Yak ${i}` })),
    );
    expect(sample.sharesFor(48)!.trigram('yak')).toBe(0); // grown by a fifth: still the old sample
    await sample.settled();
    expect(sample.sharesFor(60)!.trigram('yak')).toBe(0); // by a half: this call starts a read
    await sample.settled();
    expect(sample.sharesFor(60)!.trigram('yak')).toBe(20 / 60);

    await seedMails(context.store, [{ subject: 'Yak late' }]);
    now = 60_001;
    sample.sharesFor(61);
    await sample.settled();
    expect(sample.sharesFor(61)!.trigram('yak')).toBe(21 / 61);
  });

  it('samples runs of mails from random ids in a store larger than the sample', async () => {
    const sample = createSearchSample(context.store.db, { size: 10 });
    sample.sharesFor(61);
    await sample.settled();
    const share = sample.sharesFor(61)!.trigram('sam');
    expect(share).toBe(1);
  });

  it('a store whose ids were mostly deleted is still sampled: runs take the next mails that exist', async () => {
    await context.reset();
    const ids = await seedMails(
      context.store,
      Array.from({ length: 400 }, (_, i) => ({ status: MailStatus.ProviderSent, subject: i % 2 === 0 ? `Even ${i}` : `Odd ${i}` })),
    );
    // Nine mails in ten deleted: a sample of ids drawn at random would hit a live mail one time in ten.
    await applyTransitions(
      context.store.db,
      ids.filter((_, i) => i % 10 !== 0).map((id) => deleteTransition(id)),
    );
    const sample = createSearchSample(context.store.db, { size: 100 });
    sample.sharesFor(40);
    await sample.settled();
    const shares = sample.sharesFor(40)!;
    // Every mail left is an even one (i % 10 === 0): the runs read live mails only.
    expect(shares.text('even')).toBe(1);
    expect(shares.text('odd')).toBe(0);
  });

  it('a full address is found through its rarest trigrams, the common ones left out', async () => {
    // Every mail's To holds "example.com"; one holds the address searched for, another the same but one letter.
    await seedMails(context.store, [
      { subject: 'For Bjorn', to: [{ name: 'Bjorn', address: 'bjorn.andersen12@shop.example.com' }] },
      { subject: 'Not for Bjorn', to: [{ name: 'Bjorn', address: 'bjorn.andersen13@shop.example.com' }] },
    ]);
    const list = (q: string) => context.services.mails.listMails({ q, limit: 50 });
    const before = await list('bjorn.andersen12@shop.example.com'); // the sample is stale (61 → 63 is fine), or missing
    await new Promise((resolve) => setTimeout(resolve, 50));
    const after = await list('bjorn.andersen12@shop.example.com');
    for (const page of [before, after]) expect(page.data.map((m) => m.subject)).toEqual(['For Bjorn']);
    expect((await list('andersen1')).data.map((m) => m.subject).sort()).toEqual(['For Bjorn', 'Not for Bjorn']);
  });
});
