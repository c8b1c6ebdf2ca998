/**
 * Issue 8 (items 8 and 10), from the outside: text search over sender, To/Cc/Bcc and subject through the
 * trigram index, the received-date range, the To sort, and keyset paging (including the last page) through
 * every plan the list can take. The thresholds where the plan changes are lowered (`listTuning`), so a few
 * dozen mails walk the same code paths a million do.
 */
import { MailStatus } from '@outbox/contract';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listTuning } from '../../src/mail/mail.service.js';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';
import { seedMails, type SeedMail } from '../support/mails.js';

interface ListBody {
  data: Array<{
    id: number;
    subject: string;
    status: number;
    fromMail: string;
    to: Array<{ recipientMail: string }>;
    receivedDate: string;
  }>;
  meta: {
    total: number;
    totalIsEstimate: boolean;
    nextCursor: string | null;
    prevCursor: string | null;
    lastCursor?: string | null;
    counts: Record<string, number>;
  };
}

const T0 = Date.parse('2026-11-20T00:00:00Z');
const defaults = { ...listTuning };

let context: TestContext;
let token: string;

async function list(params: Record<string, string | number>): Promise<{ status: number; body: ListBody }> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]));
  const response = await context.app.inject({ method: 'GET', url: `/api/v1/mail/list?${query}`, headers: auth(token) });
  return { status: response.statusCode, body: response.json() as ListBody };
}

async function listOk(params: Record<string, string | number>): Promise<ListBody> {
  const { status, body } = await list(params);
  expect(status, JSON.stringify(body)).toBe(200);
  return body;
}

const subjectsOf = async (params: Record<string, string | number>) => (await listOk(params)).data.map((m) => m.subject).sort();

/** Follows nextCursor from page 1 to the end; fails on a repeated id or a runaway loop. */
async function walkForward(params: Record<string, string | number>): Promise<number[]> {
  const ids: number[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 200; page++) {
    const body = await listOk(cursor ? { ...params, cursor } : params);
    ids.push(...body.data.map((m) => m.id));
    cursor = body.meta.nextCursor;
    if (!cursor) {
      expect(body.meta.lastCursor ?? null).toBeNull();
      break;
    }
    expect(body.meta.lastCursor).toEqual(expect.any(String));
  }
  expect(new Set(ids).size).toBe(ids.length);
  return ids;
}

/** Opens the last page (meta.lastCursor of page 1), then follows prevCursor back to the start. */
async function walkBackwardFromLast(params: Record<string, string | number>): Promise<number[]> {
  const first = await listOk(params);
  if (!first.meta.lastCursor) return first.data.map((m) => m.id);
  const pages: number[][] = [];
  let cursor: string | null = first.meta.lastCursor;
  let isLast = true;
  for (let page = 0; page < 200 && cursor; page++) {
    const body = await listOk({ ...params, cursor });
    if (isLast) {
      expect(body.meta.nextCursor).toBeNull();
      expect(body.data).toHaveLength(Number(params.limit));
      isLast = false;
    }
    pages.unshift(body.data.map((m) => m.id));
    cursor = body.meta.prevCursor;
  }
  const ids = pages.flat();
  expect(new Set(ids).size).toBe(ids.length);
  return ids;
}

/** The expected order: by the sort value, then id, both in `order`. */
function expectedOrder<T extends { id: number }>(rows: T[], key: (row: T) => string | number, order: 'asc' | 'desc'): number[] {
  const sign = order === 'asc' ? 1 : -1;
  return [...rows]
    .sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      if (x !== y) return (x < y ? -1 : 1) * sign;
      return (a.id - b.id) * sign;
    })
    .map((r) => r.id);
}

afterEach(() => Object.assign(listTuning, defaults));

describe('search: what it finds', () => {
  beforeAll(async () => {
    context = await createTestContext();
    token = await loginAs(context);
    const apiKey = await context.services.auth.createApiKey('shop');
    const response = await context.app.inject({
      method: 'POST',
      url: '/api/v1/mail',
      headers: auth(apiKey),
      payload: JSON.stringify({
        fromName: 'Zed Quill',
        fromMail: 'zed@quill.example',
        to: [{ recipientName: 'Tom Tolkien', recipientMail: 'tom.tolkien@to.example' }],
        cc: [{ recipientName: 'Cecil Carbon', recipientMail: 'cecil@cc.example' }],
        bcc: [{ recipientName: 'Bea Blind', recipientMail: 'bea@bcc.example' }],
        subject: 'Quarterly figures',
        text: 'body words are not searched',
      }),
    });
    expect(response.statusCode, response.body).toBe(202);
    await seedMails(context.store, [
      { subject: 'Say "hi" OR NEAR(a b) AND NOT *star* ^caret: col:umn {x} [y] -minus' },
      { subject: "O'Brien's 100% a_b offer" },
      { subject: '1000 aXb offers' },
      { subject: 'Q9 short', status: MailStatus.ProviderError },
      { subject: 'Żółć unicode', status: MailStatus.ProviderSent },
    ]);
  });
  afterAll(() => context.close());

  it('finds by sender name and address, each To/Cc/Bcc recipient name and address, and subject', async () => {
    for (const q of [
      'quill',
      'zed@quill.ex',
      'tolkien',
      'tom.tolkien@to.example',
      'carbon',
      'cecil@cc',
      'blind',
      'bea@bcc.example',
      'rterly fig',
    ]) {
      expect(await subjectsOf({ q }), `q=${q}`).toEqual(['Quarterly figures']);
    }
  });

  it('ignores case and surrounding blanks, and finds substrings inside words', async () => {
    expect(await subjectsOf({ q: '  QUARTERLY ' })).toEqual(['Quarterly figures']);
    expect(await subjectsOf({ q: 'olkie' })).toEqual(['Quarterly figures']);
    expect(await subjectsOf({ q: 'ŻÓŁĆ' })).toEqual(['Żółć unicode']);
    expect(await subjectsOf({ q: 'nothing like this' })).toEqual([]);
  });

  it('takes %, _, quotes and FTS5 operators literally: never a syntax error', async () => {
    const special = 'Say "hi" OR NEAR(a b) AND NOT *star* ^caret: col:umn {x} [y] -minus';
    for (const q of ['"hi"', '" or near(', 'or near(', 'and not', '*star*', '^caret:', 'col:umn', '{x} [y]', '-minus', 'near(a b)']) {
      const { status, body } = await list({ q });
      expect(status, `q=${q}: ${JSON.stringify(body)}`).toBe(200);
      expect(
        body.data.map((m) => m.subject),
        `q=${q}`,
      ).toEqual([special]);
    }
    for (const q of ['"no"', 'NEAR(x y)', 'a OR b', 'x*', '""""', '(((', ')))', "'; drop table mails; --"]) {
      const { status, body } = await list({ q });
      expect(status, `q=${q}`).toBe(200);
      expect(body.data, `q=${q}`).toEqual([]);
    }
    expect(await subjectsOf({ q: '00%' })).toEqual(["O'Brien's 100% a_b offer"]);
    expect(await subjectsOf({ q: 'a_b' })).toEqual(["O'Brien's 100% a_b offer"]);
    expect(await subjectsOf({ q: "o'brien's" })).toEqual(["O'Brien's 100% a_b offer"]);
  });

  it('answers searches of 1–2 characters too, by reading rows (no trigram to look up)', async () => {
    expect(await subjectsOf({ q: 'q9' })).toEqual(['Q9 short']);
    expect(await subjectsOf({ q: '%' })).toEqual(["O'Brien's 100% a_b offer"]);
    expect(await subjectsOf({ q: '_' })).toEqual(["O'Brien's 100% a_b offer"]);
    const body = await listOk({ q: 'q', limit: 2 });
    expect(body.meta).toMatchObject({ total: 2, totalIsEstimate: false });
    expect(body.data.map((m) => m.subject).sort()).toEqual(['Q9 short', 'Quarterly figures']);
  });

  it('combines a search with the status filter; status counts stay exact', async () => {
    expect(await subjectsOf({ q: 'short', status: '4' })).toEqual(['Q9 short']);
    expect(await subjectsOf({ q: 'short', status: '0,3' })).toEqual([]);
    const body = await listOk({ q: 'offer', status: '0' });
    expect(body.meta).toMatchObject({ total: 2, totalIsEstimate: false });
    expect(body.meta.counts).toEqual({ '0': 4, '1': 0, '2': 0, '3': 1, '4': 1, '5': 0 });
  });
});

describe('paging through every plan', () => {
  interface Seeded {
    id: number;
    subject: string;
    status: number;
    receivedAt: number;
    firstTo: string;
    common: boolean;
  }
  const seeded: Seeded[] = [];

  beforeAll(async () => {
    context = await createTestContext();
    token = await loginAs(context);
    // 120 mails: two thirds hold the word "common", every seventh "rarish"; statuses, subjects, dates and
    // first recipients repeat, so sort values tie and the keyset must break ties by id.
    const mails: SeedMail[] = Array.from({ length: 120 }, (_, i) => {
      const common = i % 3 !== 0;
      const to =
        i % 11 === 0
          ? []
          : [
              { name: 'R', address: `r${String(i % 9).padStart(2, '0')}@example.com` },
              { name: 'S', address: `a${i}@example.org` },
            ];
      return {
        status: [MailStatus.Queued, MailStatus.ProviderSent, MailStatus.ProviderError][i % 3]!,
        subject: `${common ? 'common' : 'plain'} ${i % 5}${i % 7 === 0 ? ' rarish' : ''}`,
        receivedAt: T0 + (i % 40) * 60_000,
        to,
      };
    });
    const ids = await seedMails(context.store, mails);
    mails.forEach((m, i) =>
      seeded.push({
        id: ids[i]!,
        subject: m.subject!,
        status: m.status!,
        receivedAt: m.receivedAt!,
        firstTo: m.to?.[0]?.address ?? '',
        common: m.subject!.startsWith('common'),
      }),
    );
  });
  afterAll(() => context.close());

  const plans = {
    'defaults (rare search: candidates by id; date range small: read by date and sorted)': {},
    'common search (sort index walked) and a date range too large to sort in memory': {
      searchCandidateCap: 5,
      rangeCountCap: 10,
      fewRows: 3,
      searchWalkCandidates: 0,
    },
    // SQLite: the walk in received order checks each index entry against the search's trigram candidates
    // before reading its row (a word of middling frequency). PostgreSQL has no such plan: same as above.
    'common search walked through its trigram candidates': {
      searchCandidateCap: 5,
      rangeCountCap: 10,
      fewRows: 3,
      searchWalkCandidates: 1_000,
    },
    // The walk of the sort index is bounded: a page not found within walkRows rows is read through the
    // search's (or date's) own index and sorted. 4 rows: almost every page takes the second plan; 12: some
    // pages are found by the walk, others (the matches sitting further along the order) are not.
    'bounded walk runs out at once (matches read through their own index and sorted)': {
      searchCandidateCap: 5,
      rangeCountCap: 10,
      fewRows: 3,
      walkRows: 4,
      searchWalkCandidates: 0,
    },
    'bounded walk finds some pages, runs out on others': {
      searchCandidateCap: 5,
      rangeCountCap: 10,
      fewRows: 3,
      walkRows: 12,
      searchWalkCandidates: 0,
    },
  };

  for (const [plan, tuning] of Object.entries(plans)) {
    describe(plan, () => {
      const cases: Array<{
        name: string;
        params: Record<string, string | number>;
        rows: () => Seeded[];
        key: (r: Seeded) => string | number;
      }> = [
        { name: 'q=common', params: { q: 'common' }, rows: () => seeded.filter((r) => r.common), key: (r) => r.receivedAt },
        {
          name: 'q=common status=0,4 sort=subject',
          params: { q: 'common', status: '0,4', sort: 'subject' },
          rows: () => seeded.filter((r) => r.common && [0, 4].includes(r.status)),
          key: (r) => r.subject,
        },
        {
          name: 'q=rarish sort=to',
          params: { q: 'rarish', sort: 'to' },
          rows: () => seeded.filter((r) => r.subject.includes('rarish')),
          key: (r) => r.firstTo,
        },
        {
          name: 'received range sort=subject',
          params: {
            receivedFrom: new Date(T0 + 10 * 60_000).toISOString(),
            receivedTo: new Date(T0 + 30 * 60_000).toISOString(),
            sort: 'subject',
          },
          rows: () => seeded.filter((r) => r.receivedAt >= T0 + 10 * 60_000 && r.receivedAt < T0 + 30 * 60_000),
          key: (r) => r.subject,
        },
        {
          name: 'q=rarish status=0,4',
          params: { q: 'rarish', status: '0,4' },
          rows: () => seeded.filter((r) => r.subject.includes('rarish') && [0, 4].includes(r.status)),
          key: (r) => r.receivedAt,
        },
        {
          name: 'q=rarish',
          params: { q: 'rarish' },
          rows: () => seeded.filter((r) => r.subject.includes('rarish')),
          key: (r) => r.receivedAt,
        },
        {
          name: 'received range + status=0,4 sort=subject',
          params: { receivedFrom: new Date(T0 + 10 * 60_000).toISOString(), status: '0,4', sort: 'subject' },
          rows: () => seeded.filter((r) => r.receivedAt >= T0 + 10 * 60_000 && [0, 4].includes(r.status)),
          key: (r) => r.subject,
        },
        {
          name: 'received range + status=3 + q=common sort=receivedDate',
          params: { receivedFrom: new Date(T0 + 5 * 60_000).toISOString(), status: '3', q: 'common' },
          rows: () => seeded.filter((r) => r.receivedAt >= T0 + 5 * 60_000 && r.status === 3 && r.common),
          key: (r) => r.receivedAt,
        },
        { name: 'sort=to', params: { sort: 'to' }, rows: () => seeded, key: (r) => r.firstTo },
        // Every match sorts after (desc: before) all 'plain …' subjects: the walk meets none of them at first.
        {
          name: 'q=common sort=subject',
          params: { q: 'common', sort: 'subject' },
          rows: () => seeded.filter((r) => r.common),
          key: (r) => r.subject,
        },
        {
          name: 'received range sort=status',
          params: { receivedFrom: new Date(T0 + 30 * 60_000).toISOString(), sort: 'status' },
          rows: () => seeded.filter((r) => r.receivedAt >= T0 + 30 * 60_000),
          key: (r) => r.status,
        },
        {
          name: 'received range + status=0,4 + q=common sort=from',
          params: { receivedTo: new Date(T0 + 35 * 60_000).toISOString(), status: '0,4', q: 'common', sort: 'from' },
          rows: () => seeded.filter((r) => r.receivedAt < T0 + 35 * 60_000 && [0, 4].includes(r.status) && r.common),
          key: () => 'sam@example.com', // one sender: every value ties, the id decides
        },
      ];
      for (const c of cases) {
        for (const order of ['asc', 'desc'] as const) {
          it(`${c.name} order=${order}: forward and from the last page back, no duplicate, no gap`, async () => {
            Object.assign(listTuning, tuning);
            const params = { ...c.params, order, limit: 7 };
            const expected = expectedOrder(c.rows(), c.key, order);
            expect(expected.length).toBeGreaterThan(7);
            expect(await walkForward(params)).toEqual(expected);
            expect(await walkBackwardFromLast(params)).toEqual(expected);
          });
        }
      }

      it('counts: exact for a rare search and a small range, flagged estimates beyond', async () => {
        Object.assign(listTuning, tuning);
        const commonCount = seeded.filter((r) => r.common).length;
        const common = (await listOk({ q: 'common', limit: 5 })).meta;
        if (commonCount > listTuning.searchCandidateCap) {
          expect(common.totalIsEstimate).toBe(true);
          expect(common.total).toBeGreaterThan(0);
          expect(common.total).toBeLessThanOrEqual(seeded.length);
        } else {
          expect(common).toMatchObject({ total: commonCount, totalIsEstimate: false });
        }
        const range = (await listOk({ receivedTo: new Date(T0 + 20 * 60_000).toISOString(), limit: 5 })).meta;
        const inRange = seeded.filter((r) => r.receivedAt < T0 + 20 * 60_000).length;
        if (inRange > listTuning.rangeCountCap) expect(range).toMatchObject({ total: listTuning.rangeCountCap, totalIsEstimate: true });
        else expect(range).toMatchObject({ total: inRange, totalIsEstimate: false });
        expect(range.counts).toEqual({ '0': 40, '1': 0, '2': 0, '3': 40, '4': 40, '5': 0 });
      });

      // Page 1 and the last page count a rare search in the page's own read; a page after a cursor counts apart.
      it('a search counts the same total on page 1, on a page after a cursor and on the last page', async () => {
        Object.assign(listTuning, tuning);
        const params = { q: 'rarish', status: '0,4', limit: 3 };
        const matching = seeded.filter((r) => r.subject.includes('rarish') && [0, 4].includes(r.status)).length;
        const first = await listOk(params);
        const second = await listOk({ ...params, cursor: first.meta.nextCursor! });
        const last = await listOk({ ...params, cursor: first.meta.lastCursor! });
        expect(second.meta.total).toBe(first.meta.total);
        expect(last.meta.total).toBe(first.meta.total);
        if (seeded.filter((r) => r.subject.includes('rarish')).length <= listTuning.searchCandidateCap) {
          expect(first.meta).toMatchObject({ total: matching, totalIsEstimate: false });
        }
        const none = await listOk({ q: 'rarish', status: '5', limit: 3 });
        expect(none.meta).toMatchObject({ total: 0, nextCursor: null, lastCursor: null });
        expect(none.data).toEqual([]);
      });
    });
  }

  it('sorts To by the first To address; a mail without To sorts as empty', async () => {
    const body = await listOk({ sort: 'to', order: 'asc', limit: 500 });
    const firsts = body.data.map((m) => m.to[0]?.recipientMail ?? '');
    expect(firsts).toEqual([...firsts].sort());
    expect(firsts[0]).toBe('');
    expect(body.data.at(-1)!.to[0]!.recipientMail).toBe('r08@example.com');
  });

  it('date range: from is inclusive, to exclusive, to-only and from-only work', async () => {
    const at = (minute: number) => new Date(T0 + minute * 60_000).toISOString();
    const exactly = (minute: number) => seeded.filter((r) => r.receivedAt === T0 + minute * 60_000).length;
    expect((await listOk({ receivedFrom: at(3), receivedTo: at(4), limit: 500 })).data).toHaveLength(exactly(3));
    expect((await listOk({ receivedFrom: at(3), receivedTo: at(3.001), limit: 500 })).data).toHaveLength(exactly(3));
    expect((await listOk({ receivedFrom: at(39), limit: 500 })).data).toHaveLength(exactly(39));
    expect((await listOk({ receivedTo: at(1), limit: 500 })).data).toHaveLength(exactly(0));
    const inside = (await listOk({ receivedFrom: at(3), receivedTo: at(4) })).data;
    expect(inside.every((m) => m.receivedDate === at(3))).toBe(true);
  });

  it('refuses a bad date or an empty range with 400 naming the field', async () => {
    const bad = await list({ receivedFrom: 'yesterday' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('receivedFrom');
    const reversed = await list({ receivedFrom: '2026-11-20T10:00:00Z', receivedTo: '2026-11-20T10:00:00Z' });
    expect(reversed.status).toBe(400);
    expect(reversed.body).toMatchObject({ error: { code: 'invalid_date_range', message: expect.stringContaining('receivedTo') } });
    expect((await list({ sort: 'cc' })).status).toBe(400);
  });

  it('offers no last page when page 1 is the only one, and refuses a last-page cursor of another sort', async () => {
    const only = await listOk({ q: 'rarish', limit: 500 });
    expect(only.meta).toMatchObject({ nextCursor: null, prevCursor: null, lastCursor: null });
    const withLast = await listOk({ sort: 'to', limit: 5 });
    const other = await list({ sort: 'subject', limit: 5, cursor: withLast.meta.lastCursor! });
    expect(other.status).toBe(400);
  });
});

// Two rare statuses in received order are read as a page per status and merged (list-per-status.ts): the
// merged pages must be the same as one walk's, cursor after cursor, both ways, with ties in received_at.
describe('several rare statuses: a page per status, merged', () => {
  const seeded: Array<{ id: number; status: number; receivedAt: number; common: boolean }> = [];

  beforeAll(async () => {
    context = await createTestContext();
    token = await loginAs(context);
    // 150 mails: 15 Queued and 15 ProviderError among 120 ProviderSent, so 0,4 hold a fifth of the mails;
    // received_at repeats every 20 mails.
    const mails: SeedMail[] = Array.from({ length: 150 }, (_, i) => ({
      status: i % 10 === 0 ? MailStatus.Queued : i % 10 === 5 ? MailStatus.ProviderError : MailStatus.ProviderSent,
      subject: i % 2 === 0 ? `common ${i}` : `plain ${i}`,
      receivedAt: T0 + (i % 20) * 60_000,
    }));
    const ids = await seedMails(context.store, mails);
    mails.forEach((m, i) => seeded.push({ id: ids[i]!, status: m.status!, receivedAt: m.receivedAt!, common: i % 2 === 0 }));
    // PostgreSQL decides between walking and looking up from the planner's estimate, as after autovacuum.
    if (context.store.engine === 'postgres') await sql`analyze mails`.execute(context.store.db);
  });
  afterAll(() => context.close());

  const plans = {
    defaults: {},
    // PostgreSQL: a search among the statuses is walked (the word is "common" beyond 5 matches).
    'search walked': { searchCandidateCap: 5, searchWalkCandidates: 0 },
  };
  for (const [plan, tuning] of Object.entries(plans)) {
    for (const order of ['asc', 'desc'] as const) {
      for (const [name, params, keep] of [
        ['status=0,4', { status: '0,4' }, (r: (typeof seeded)[number]) => [0, 4].includes(r.status)],
        ['status=0,4 q=common', { status: '0,4', q: 'common' }, (r: (typeof seeded)[number]) => [0, 4].includes(r.status) && r.common],
      ] as const) {
        it(`${plan}: ${name} order=${order}, forward and from the last page back`, async () => {
          Object.assign(listTuning, tuning);
          const query = { ...params, order, limit: 4 };
          const expected = expectedOrder(seeded.filter(keep), (r) => r.receivedAt, order);
          expect(expected.length).toBeGreaterThan(8);
          expect(await walkForward(query)).toEqual(expected);
          expect(await walkBackwardFromLast(query)).toEqual(expected);
        });
      }
    }
  }
});
