/**
 * Text search over sender, To/Cc/Bcc and subject through the trigram
 * index, the received-date range, the To sort, and keyset paging (including the last page) through each of
 * the four plans (list-plan.ts). The table asserts the rows and the plan that read every page; the planner's
 * thresholds are options of the call, lowered so that a hundred mails take the plans a million do.
 */
import { MailStatus } from '@outbox/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListMailsInput } from '../../src/list/list.service.js';
import { DEFAULT_LIST_OPTIONS, type ListOptions } from '../../src/list/list-plan.js';
import { searchPunctuationKeys } from '../../src/store/migrations/019-search-punctuation-keys.js';
import { searchApart } from '../../src/store/migrations/031-search-apart.js';
import { auth, createTestContext, loginAs, testEngine, type TestContext } from '../support/context.js';
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
    totalIsLowerBound: boolean;
    totalIsEstimate: boolean;
    nextCursor: string | null;
    prevCursor: string | null;
    lastCursor?: string | null;
    counts: Record<string, number>;
  };
}

const T0 = Date.parse('2026-11-20T00:00:00Z');

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

interface Page {
  ids: number[];
  meta: ListBody['meta'];
  /** The plan that read the page (from the service; the HTTP answer leaves it out). */
  plan?: string;
  /** Where the count read its matches (from the service; undefined: nothing to count). */
  countSource?: string | undefined;
}
type Lister = (params: Record<string, string | number>) => Promise<Page>;

const overHttp: Lister = async (params) => {
  const body = await listOk(params);
  return { ids: body.data.map((m) => m.id), meta: body.meta };
};

/** The service itself, with the planner's thresholds as given. */
const viaService =
  (options: ListOptions): Lister =>
  async (params) => {
    const input: ListMailsInput = {
      statuses: params.status === undefined ? undefined : String(params.status).split(',').map(Number),
      q: params.q === undefined ? undefined : String(params.q),
      receivedFrom: params.receivedFrom as string | undefined,
      receivedTo: params.receivedTo as string | undefined,
      sort: params.sort as ListMailsInput['sort'],
      order: params.order as ListMailsInput['order'],
      limit: params.limit === undefined ? undefined : Number(params.limit),
      cursor: params.cursor as string | undefined,
    };
    const answer = await context.services.mails.listMails(input, options);
    return { ids: answer.data.map((m) => m.id), meta: answer.meta as ListBody['meta'], plan: answer.plan, countSource: answer.countSource };
  };

/** Follows nextCursor from page 1 to the end; fails on a repeated id or a runaway loop. */
async function walkForward(lister: Lister, params: Record<string, string | number>): Promise<{ ids: number[]; plans: string[] }> {
  const ids: number[] = [];
  const plans: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 200; page++) {
    const body = await lister(cursor ? { ...params, cursor } : params);
    ids.push(...body.ids);
    if (body.plan) plans.push(body.plan);
    cursor = body.meta.nextCursor;
    if (!cursor) {
      expect(body.meta.lastCursor ?? null).toBeNull();
      break;
    }
    expect(body.meta.lastCursor).toEqual(expect.any(String));
  }
  expect(new Set(ids).size).toBe(ids.length);
  return { ids, plans };
}

/** Opens the last page (meta.lastCursor of page 1), then follows prevCursor back to the start. */
async function walkBackwardFromLast(lister: Lister, params: Record<string, string | number>): Promise<{ ids: number[]; plans: string[] }> {
  const first = await lister(params);
  if (!first.meta.lastCursor) return { ids: first.ids, plans: first.plan ? [first.plan] : [] };
  const pages: number[][] = [];
  const plans: string[] = [];
  let cursor: string | null = first.meta.lastCursor;
  let isLast = true;
  for (let page = 0; page < 200 && cursor; page++) {
    const body = await lister({ ...params, cursor });
    if (isLast) {
      expect(body.meta.nextCursor).toBeNull();
      expect(body.ids).toHaveLength(Number(params.limit));
      isLast = false;
    }
    pages.unshift(body.ids);
    if (body.plan) plans.push(body.plan);
    cursor = body.meta.prevCursor;
  }
  const ids = pages.flat();
  expect(new Set(ids).size).toBe(ids.length);
  return { ids, plans };
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
    expect(body.meta).toMatchObject({ total: 2, totalIsLowerBound: false });
    expect(body.data.map((m) => m.subject).sort()).toEqual(['Q9 short', 'Quarterly figures']);
  });

  it('combines a search with the status filter; status counts stay exact', async () => {
    expect(await subjectsOf({ q: 'short', status: '4' })).toEqual(['Q9 short']);
    expect(await subjectsOf({ q: 'short', status: '0,3' })).toEqual([]);
    const body = await listOk({ q: 'offer', status: '0' });
    expect(body.meta).toMatchObject({ total: 2, totalIsLowerBound: false });
    expect(body.meta.counts).toEqual({ '0': 4, '1': 0, '2': 0, '3': 1, '4': 1, '5': 0 });
  });
});

describe('a search looked up by its rarest trigrams finds what the whole search finds', () => {
  // 400 mails: one holds "zanzibar7" (0.25 %), 31 "andersen" (7.75 %); 40 are Error (10 %), 4 of them andersens.
  const expected = { zanzibar: [] as number[], andersenError: [] as number[] };
  beforeAll(async () => {
    context = await createTestContext();
    const mails: SeedMail[] = Array.from({ length: 400 }, (_, i) => ({
      subject: i === 123 ? 'Parcel zanzibar7 shipped' : `Parcel ${i} shipped`,
      to: [{ name: 'R', address: i % 13 === 0 ? `bjorn.andersen${i}@mail.example` : `user${i}@mail.example` }],
      status: i % 10 === 0 ? MailStatus.Error : MailStatus.ProviderSent,
    }));
    const ids = await seedMails(context.store, mails);
    mails.forEach((mail, i) => {
      if (i === 123) expected.zanzibar.push(ids[i]!);
      if (i % 13 === 0 && mail.status === MailStatus.Error) expected.andersenError.push(ids[i]!);
    });
  });
  afterAll(() => context.close());

  it('on PostgreSQL through the keys chooseIndexKeys picks from the sample; the same rows on both engines', async () => {
    const list = (q: string, statuses?: number[]) =>
      context.services.mails.listMails({ q, statuses, limit: 50, sort: 'receivedDate', order: 'asc' }, DEFAULT_LIST_OPTIONS);
    await list('warm');
    await context.services.mails.searchSampleSettled();
    const zanzibar = await list('zanzibar7');
    expect(zanzibar.data.map((m) => m.id)).toEqual(expected.zanzibar);
    const andersenError = await list('andersen', [MailStatus.Error]);
    expect(andersenError.data.map((m) => m.id)).toEqual(expected.andersenError);
    expect(andersenError.meta).toMatchObject({ total: expected.andersenError.length, totalIsLowerBound: false });
    // 31 mails hold "andersen"; alone it is on 7.75 %: looked up whole.
    const andersen = await list('andersen');
    expect(andersen.meta.total).toBe(31);
    if (testEngine === 'postgres') {
      // A search on 0.25 % of the mails: its rarest trigram. On 7.75 %, beside a status holding 10 %: the same.
      expect(zanzibar.indexKeys).toEqual(['zan']);
      expect(andersenError.indexKeys).toEqual(['and']);
      expect(andersen.indexKeys).toBeUndefined();
    } else {
      expect(zanzibar.indexKeys).toBeUndefined();
    }
  });

  // PostgreSQL's own table (migration 031): the SQLite half leaves it out rather than reporting it skipped.
  if (testEngine === 'postgres')
    it('PostgreSQL: the trigram indexes live in mail_search, apart from the record; a search with a status joins them by id', async () => {
      const { rows } = await sql<{ table: string; name: string; definition: string }>`
        select tablename as table, indexname as name, indexdef as definition from pg_indexes
        where tablename in ('mails', 'mail_search') and indexdef like '% USING gin %' order by indexname`.execute(context.store.db);
      expect(rows.map((r) => [r.table, r.name])).toEqual([
        ['mail_search', 'mail_search_keys_trgm_idx'],
        ['mail_search', 'mail_search_text_trgm_idx'],
      ]);
      expect(rows[1]!.definition).toContain('USING gin (search_text gin_trgm_ops)');
      // The status is the record's, checked on the mails the search's index found (docs/query-plans.md).
      const found = await context.services.mails.listMails(
        { q: 'andersen', statuses: [MailStatus.Error], limit: 50 },
        DEFAULT_LIST_OPTIONS,
      );
      expect(found.data.map((m) => m.id).sort((a, b) => a - b)).toEqual([...expected.andersenError].sort((a, b) => a - b));
    });
});

describe('a search with punctuation', () => {
  // 600 mails. Subjects: "Order <i>/<i mod 7>", every 80th "Clav! sale", every 50th "re: n.j.smith@x-y.test";
  // addresses user<i>@mail.example, every 60th n.jensen<i>@shop.example. Searched on both engines; on PostgreSQL
  // the rare punctuation is looked up in mail_search_keys (store/punctuation-keys.ts).
  const texts = new Map<number, string>();
  beforeAll(async () => {
    context = await createTestContext();
    const mails: SeedMail[] = Array.from({ length: 600 }, (_, i) => ({
      subject: i % 50 === 7 ? 're: n.j.smith@x-y.test' : i % 80 === 3 ? 'Clav! sale' : `Order ${i}/${i % 7}`,
      to: [{ name: 'R', address: i % 60 === 11 ? `n.jensen${i}@shop.example` : `user${i}@mail.example` }],
    }));
    const ids = await seedMails(context.store, mails);
    mails.forEach((mail, i) => texts.set(ids[i]!, `sam sender sam@example.com r ${mail.to![0]!.address} ${mail.subject!}`.toLowerCase()));
  });
  afterAll(() => context.close());

  const list = (q: string) => context.services.mails.listMails({ q, sort: 'receivedDate', order: 'asc' }, DEFAULT_LIST_OPTIONS);
  const expectedIds = (q: string) => [...texts].filter(([, text]) => text.includes(q)).map(([id]) => id);

  it('finds exactly the mails whose text holds it, wherever the punctuation sits in the search and the mail', async () => {
    await list('warm');
    await context.services.mails.searchSampleSettled();
    for (const q of [
      '123/4',
      '/4',
      '3/',
      'clav!',
      'v! s',
      'n.j',
      'j.sm',
      'n.j.smith@x-y',
      '@x-y.t',
      'n.jensen11@',
      's: n.',
      '.example',
      'r 0/',
    ]) {
      const found = await list(q);
      expect(
        found.data.map((m) => m.id),
        q,
      ).toEqual(expectedIds(q));
      expect(found.meta.total, q).toBe(expectedIds(q).length);
    }
  });

  it('PostgreSQL looks a rare one up by its spelled punctuation, and a common one by its words', async () => {
    await context.services.mails.searchSampleSettled();
    const rare = await list('123/4');
    const edge = await list('clav!');
    const common = await list('.example');
    if (testEngine === 'postgres') {
      expect(rare.punctuationKeys).toEqual(['23qo4']);
      expect(rare.indexKeys).toEqual([]);
      expect(edge.punctuationKeys).toEqual(['avqa']);
      expect(common.punctuationKeys).toBeUndefined();
    } else {
      for (const found of [rare, edge, common]) expect(found.punctuationKeys).toBeUndefined();
    }
  });

  // PostgreSQL's own table (migrations 019 and 031): the SQLite half leaves it out rather than reporting it skipped.
  if (testEngine === 'postgres')
    it('PostgreSQL: migrations 019 and 031 give the mails already stored the search row insertMails writes with a new one', async () => {
      const readSearch = async () =>
        (
          await sql<{ mail_id: string; search_text: string; keys: string }>`
            select mail_id, search_text, keys from mail_search order by mail_id`.execute(context.store.db)
        ).rows;
      const written = await readSearch();
      expect(written).toHaveLength(600);
      const seventh = written.find((r) => Number(r.mail_id) === [...texts.keys()][7]);
      expect(seventh?.keys).toBe('amqvex leqnco r7qvma ilqnex reqp nqnj jqnsm thqvx xqmy yqnte');
      const { rows: differing } = await sql<{ id: string }>`
        select m.id from mails m left join mail_search s on s.mail_id = m.id where s.search_text is distinct from m.search_text`.execute(
        context.store.db,
      );
      expect(differing).toEqual([]);
      // Back to before migration 019 (no keys, the trigram index on `mails`), then up again: each fills its table.
      const apart = searchApart('postgres');
      const keys = searchPunctuationKeys('postgres');
      await apart.down!(context.store.db as never);
      await keys.down!(context.store.db as never);
      await keys.up(context.store.db as never);
      await apart.up(context.store.db as never);
      expect(await readSearch()).toEqual(written);
      expect((await list('j.sm')).data.map((m) => m.id)).toEqual(expectedIds('j.sm'));
      expect((await list('clav!')).data.map((m) => m.id)).toEqual(expectedIds('clav!'));
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
  const minute = (m: number) => new Date(T0 + m * 60_000).toISOString();

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
        status: [MailStatus.Queued, MailStatus.ProviderSent, MailStatus.ProviderError, MailStatus.ProviderSent][i % 4]!,
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

  /**
   * The thresholds, and the plan each kind of request takes under them. `index`: no term the counters do not
   * count (or a date range in received order). `counted`: a search or a date range in another order.
   */
  const presets: Array<{ name: string; options: ListOptions; index: string; counted: string }> = [
    { name: 'defaults: few matches are read by id', options: DEFAULT_LIST_OPTIONS, index: 'index', counted: 'gather' },
    {
      name: 'more matches than the count cap: the sort index walked',
      options: { countCap: 5, walkRows: 5_000, candidateRows: 0, walkMargin: 1, candidateWalkFactor: 2, lookUpFirstShare: 0.02 },
      index: 'index',
      counted: 'walk',
    },
    {
      // SQLite: the search is expected on few mails (the first 6 matches spanned most ids), so the walk checks
      // each index entry against its trigram candidates; a date range alone has none. PostgreSQL walks as above.
      name: 'a search expected on few mails: walked through its trigram candidates (SQLite)',
      options: { countCap: 5, walkRows: 5_000, candidateRows: 1_000, walkMargin: 1, candidateWalkFactor: Infinity, lookUpFirstShare: 0.02 },
      index: 'index',
      counted: 'walk',
    },
    {
      // PostgreSQL: the search checked on each row the other terms find (lookUpFirstShare 0).
      name: 'a walk that finds no page in its bound: sorted by the engine',
      options: { countCap: 5, walkRows: 1, candidateRows: 0, walkMargin: Infinity, candidateWalkFactor: 2, lookUpFirstShare: 0 },
      index: 'index',
      counted: 'sort',
    },
    {
      // PostgreSQL: the search's ids looked up in mail_search first, then their rows by key (lookUpFirstShare 1).
      name: 'sorted by the engine, the search looked up first (PostgreSQL)',
      options: { countCap: 5, walkRows: 1, candidateRows: 0, walkMargin: Infinity, candidateWalkFactor: 2, lookUpFirstShare: 1 },
      index: 'index',
      counted: 'sort',
    },
  ];
  const is = (r: Seeded, statuses: number[]) => statuses.includes(r.status);
  const cases: Array<{
    name: string;
    kind: 'index' | 'counted';
    params: Record<string, string | number>;
    rows: () => Seeded[];
    key: (r: Seeded) => string | number;
  }> = [
    { name: 'no filter', kind: 'index', params: {}, rows: () => seeded, key: (r) => r.receivedAt },
    { name: 'sort=to', kind: 'index', params: { sort: 'to' }, rows: () => seeded, key: (r) => r.firstTo },
    {
      name: 'status=0,4',
      kind: 'index',
      params: { status: '0,4' },
      rows: () => seeded.filter((r) => is(r, [0, 4])),
      key: (r) => r.receivedAt,
    },
    {
      name: 'status=3,4 sort=status',
      kind: 'index',
      params: { status: '3,4', sort: 'status' },
      rows: () => seeded.filter((r) => is(r, [3, 4])),
      key: (r) => r.status,
    },
    {
      name: 'status=0,3 sort=subject',
      kind: 'index',
      params: { status: '0,3', sort: 'subject' },
      rows: () => seeded.filter((r) => is(r, [0, 3])),
      key: (r) => r.subject,
    },
    {
      name: 'status=3 sort=lastUpdate',
      kind: 'index',
      params: { status: '3', sort: 'lastUpdate' },
      rows: () => seeded.filter((r) => is(r, [3])),
      key: (r) => r.receivedAt,
    },
    // Nothing seeded was sent: every value ties at 0, the id decides.
    {
      name: 'status=0,3 sort=providerSentDate',
      kind: 'index',
      params: { status: '0,3', sort: 'providerSentDate' },
      rows: () => seeded.filter((r) => is(r, [0, 3])),
      key: () => 0,
    },
    {
      name: 'received range + status=0,3',
      kind: 'index',
      params: { receivedFrom: minute(10), receivedTo: minute(30), status: '0,3' },
      rows: () => seeded.filter((r) => r.receivedAt >= T0 + 10 * 60_000 && r.receivedAt < T0 + 30 * 60_000 && is(r, [0, 3])),
      key: (r) => r.receivedAt,
    },
    { name: 'q=common', kind: 'counted', params: { q: 'common' }, rows: () => seeded.filter((r) => r.common), key: (r) => r.receivedAt },
    {
      name: 'q=common status=0,4',
      kind: 'counted',
      params: { q: 'common', status: '0,4' },
      rows: () => seeded.filter((r) => r.common && is(r, [0, 4])),
      key: (r) => r.receivedAt,
    },
    {
      name: 'q=common status=0,4 sort=subject',
      kind: 'counted',
      params: { q: 'common', status: '0,4', sort: 'subject' },
      rows: () => seeded.filter((r) => r.common && is(r, [0, 4])),
      key: (r) => r.subject,
    },
    // Every match sorts after (desc: before) all 'plain …' subjects: the walk meets none of them at first.
    {
      name: 'q=common sort=subject',
      kind: 'counted',
      params: { q: 'common', sort: 'subject' },
      rows: () => seeded.filter((r) => r.common),
      key: (r) => r.subject,
    },
    {
      name: 'q=rarish sort=to',
      kind: 'counted',
      params: { q: 'rarish', sort: 'to' },
      rows: () => seeded.filter((r) => r.subject.includes('rarish')),
      key: (r) => r.firstTo,
    },
    {
      name: 'received range sort=subject',
      kind: 'counted',
      params: { receivedFrom: minute(10), receivedTo: minute(30), sort: 'subject' },
      rows: () => seeded.filter((r) => r.receivedAt >= T0 + 10 * 60_000 && r.receivedAt < T0 + 30 * 60_000),
      key: (r) => r.subject,
    },
    {
      name: 'received range sort=status',
      kind: 'counted',
      params: { receivedFrom: minute(20), sort: 'status' },
      rows: () => seeded.filter((r) => r.receivedAt >= T0 + 20 * 60_000),
      key: (r) => r.status,
    },
    {
      name: 'received range + status=3 + q=common',
      kind: 'counted',
      params: { receivedFrom: minute(5), status: '3', q: 'common' },
      rows: () => seeded.filter((r) => r.receivedAt >= T0 + 5 * 60_000 && r.status === 3 && r.common),
      key: (r) => r.receivedAt,
    },
    {
      name: 'received range + status=0,4 + q=common sort=from',
      kind: 'counted',
      params: { receivedTo: minute(35), status: '0,4', q: 'common', sort: 'from' },
      rows: () => seeded.filter((r) => r.receivedAt < T0 + 35 * 60_000 && is(r, [0, 4]) && r.common),
      key: () => 'sam@example.com', // one sender: every value ties, the id decides
    },
  ];

  /**
   * Three to five pages a walk, each of a prime number of rows (7 to 29), so that a page ends inside a run of
   * tied sort values (three mails a minute, thirty or sixty a status) and the keyset breaks the tie by id.
   * Pages of 7 throughout walked up to 18 pages a way, about 2,000 lists for the section.
   */
  const pageSizeFor = (rows: number) => [7, 11, 13, 17, 19, 23].find((size) => size * 5 >= rows) ?? 29;

  for (const preset of presets) {
    describe(preset.name, () => {
      for (const c of cases) {
        it(`${c.name}: ${preset[c.kind]}, both orders, forward and from the last page back`, async () => {
          const lister = viaService(preset.options);
          for (const order of ['asc', 'desc'] as const) {
            const expected = expectedOrder(c.rows(), c.key, order);
            const params = { ...c.params, order, limit: pageSizeFor(expected.length) };
            expect(expected.length).toBeGreaterThan(2 * params.limit);
            const forward = await walkForward(lister, params);
            const backward = await walkBackwardFromLast(lister, params);
            expect(forward.ids, `${c.name} order=${order}`).toEqual(expected);
            expect(backward.ids, `${c.name} order=${order}, backwards`).toEqual(expected);
            const plan =
              preset[c.kind] === 'walk' && preset.options.candidateRows > 0 && c.params.q !== undefined && context.store.engine === 'sqlite'
                ? 'walk through candidates'
                : preset[c.kind];
            expect(new Set([...forward.plans, ...backward.plans]), `${c.name} order=${order}: plans`).toEqual(new Set([plan]));
          }
        });
      }

      it('totals: exact from the counters, counted up to the cap, then the cap as a lower bound', async () => {
        const lister = viaService(preset.options);
        const cap = preset.options.countCap;
        const statusTotal = seeded.filter((r) => is(r, [0, 4])).length;
        expect((await lister({ status: '0,4', limit: 5 })).meta).toMatchObject({ total: statusTotal, totalIsLowerBound: false });
        const filters: Array<{ q?: string; status?: string; receivedTo?: string }> = [
          { q: 'common' },
          { q: 'rarish', status: '0,4' },
          { receivedTo: minute(20) },
          { q: 'sh', status: '3' }, // too short for the trigram index
        ];
        for (const params of filters) {
          const matching = seeded.filter(
            (r) =>
              (params.q === undefined || r.subject.includes(params.q)) &&
              (params.status === undefined || is(r, params.status.split(',').map(Number))) &&
              (params.receivedTo === undefined || r.receivedAt < T0 + 20 * 60_000),
          ).length;
          const pages = [await lister({ ...(params as Record<string, string>), limit: 3 })];
          pages.push(await lister({ ...(params as Record<string, string>), limit: 3, cursor: pages[0]!.meta.nextCursor! }));
          pages.push(await lister({ ...(params as Record<string, string>), limit: 3, cursor: pages[0]!.meta.lastCursor! }));
          for (const page of pages) {
            expect(page.meta, JSON.stringify(params)).toMatchObject(
              matching > cap ? { total: cap, totalIsLowerBound: true } : { total: matching, totalIsLowerBound: false },
            );
            expect(page.meta.totalIsEstimate).toBe(false);
            expect(page.meta.counts).toEqual({ '0': 30, '1': 0, '2': 0, '3': 60, '4': 30, '5': 0 });
          }
        }
        const none = await lister({ q: 'rarish', status: '5', limit: 3 });
        expect(none.meta).toMatchObject({ total: 0, totalIsLowerBound: false, nextCursor: null, lastCursor: null });
        expect(none.ids).toEqual([]);
      });
    });
  }

  /**
   * A search with statuses or a date range is counted through whichever source reads fewer rows before it has
   * `countCap + 1` matches (chooseMatchSource): on SQLite a seek of the statuses' or the range's index, or the
   * search's trigram candidates; PostgreSQL chooses itself. Either way the rows, the plan and the total are
   * the same. "common" is on 80 mails and "rarish" on 18; statuses 0 and 4 hold 60, status 3 holds 60; each
   * minute of the 40 holds 3 mails.
   */
  const countCases: Array<{
    name: string;
    params: Record<string, string>;
    options: ListOptions;
    sqlite: string;
    plan: string;
  }> = [
    // 30 rows of the status: ~9 read to find 6 matches (weighted twice: 18), against ~24 candidates (one in
    // four has the status).
    {
      name: 'a common word with a status',
      params: { q: 'common', status: '4' },
      options: { ...DEFAULT_LIST_OPTIONS, countCap: 5, candidateWalkFactor: Infinity, lookUpFirstShare: 0.02 },
      sqlite: 'seek',
      plan: 'walk',
    },
    // 18 candidates, of which ~9 pass the statuses, against ~40 status rows to find 6 rarish ones: the trigrams.
    {
      name: 'a rare word with statuses',
      params: { q: 'rarish', status: '0,3' },
      options: { ...DEFAULT_LIST_OPTIONS, countCap: 5, candidateWalkFactor: Infinity, lookUpFirstShare: 0.02 },
      sqlite: 'trigrams',
      plan: 'walk',
    },
    // Two minutes: ~6 mails, against the 80 candidates.
    {
      name: 'a common word in two minutes',
      params: { q: 'common', receivedFrom: minute(10), receivedTo: minute(12) },
      options: DEFAULT_LIST_OPTIONS,
      sqlite: 'seek',
      plan: 'gather',
    },
    {
      name: 'a word alone',
      params: { q: 'common' },
      options: { ...DEFAULT_LIST_OPTIONS, countCap: 5, candidateWalkFactor: Infinity, lookUpFirstShare: 0.02 },
      sqlite: 'trigrams',
      plan: 'walk',
    },
  ];
  for (const c of countCases) {
    it(`the count of ${c.name} (${JSON.stringify(c.params)}) reads the cheaper source; rows and totals as ever`, async () => {
      const lister = viaService(c.options);
      const statuses = (c.params.status ?? '0,1,2,3,4,5').split(',').map(Number);
      const [from, to] = [Date.parse(c.params.receivedFrom ?? minute(0)), Date.parse(c.params.receivedTo ?? minute(60))];
      const word = c.params.q!;
      const rows = seeded.filter((r) => r.subject.includes(word) && is(r, statuses) && r.receivedAt >= from && r.receivedAt < to);
      const params = { ...c.params, order: 'desc', limit: 7 };
      const first = await lister(params);
      expect(first.countSource, `${c.name}: count source`).toBe(context.store.engine === 'sqlite' ? c.sqlite : 'engine');
      expect(first.meta).toMatchObject(
        rows.length > c.options.countCap
          ? { total: c.options.countCap, totalIsLowerBound: true }
          : { total: rows.length, totalIsLowerBound: false },
      );
      const forward = await walkForward(lister, params);
      expect(forward.ids).toEqual(expectedOrder(rows, (r) => r.receivedAt, 'desc'));
      // SQLite walks through the search's candidates (the default candidateRows is far above 120 mails, and the
      // cases ask for the candidate walk whatever it is expected to pass).
      const plan = c.plan === 'walk' && context.store.engine === 'sqlite' ? 'walk through candidates' : c.plan;
      expect(new Set(forward.plans)).toEqual(new Set([plan]));
    });
  }

  // Status 3 holds 15 mails since minute 30, read first in status order desc: a walk of 5 entries finds its 3
  // (limit 2 + 1). Status 0 holds 6, at minutes 32 and 36: its walk stops at the bound with 2, but every row
  // it has not looked at sorts after status 3. The page is known from the status-3 rows: no sort.
  it('a walk of several statuses keeps its page when a status that stopped at its bound sorts after it', async () => {
    const options: ListOptions = {
      countCap: 5,
      walkRows: 5,
      candidateRows: 0,
      walkMargin: Infinity,
      candidateWalkFactor: 2,
      lookUpFirstShare: 0.02,
    };
    const params = { status: '0,3', sort: 'status', order: 'desc', receivedFrom: minute(30), limit: 2 };
    const page1 = await viaService(options)(params);
    const expected = expectedOrder(
      seeded.filter((r) => is(r, [0, 3]) && r.receivedAt >= T0 + 30 * 60_000),
      (r) => r.status,
      'desc',
    );
    expect(expected).toHaveLength(21);
    expect(page1.plan).toBe('walk');
    expect(page1.ids).toEqual(expected.slice(0, 2));
    expect((await walkForward(viaService(options), params)).ids).toEqual(expected);
    expect((await walkBackwardFromLast(viaService(options), params)).ids).toEqual(expected);
  });

  // A request without `limit` (the spec's client) wants every match. A bounded walk stopped at its bound and
  // answered what it had found as if it were all: none of the 80 mails holding "common" when the first entries
  // of the subject order hold none.
  it('without limit: every match, in order, with thresholds that would bound a walk', async () => {
    const options: ListOptions = {
      countCap: 5,
      walkRows: 3,
      candidateRows: 0,
      walkMargin: Infinity,
      candidateWalkFactor: 2,
      lookUpFirstShare: 0.02,
    };
    const requests: Array<{ params: Record<string, string>; rows: Seeded[]; key: (r: Seeded) => string | number }> = [
      { params: { q: 'common', sort: 'subject' }, rows: seeded.filter((r) => r.common), key: (r) => r.subject },
      {
        params: { receivedFrom: minute(10), status: '0,3', sort: 'to' },
        rows: seeded.filter((r) => r.receivedAt >= T0 + 10 * 60_000 && is(r, [0, 3])),
        key: (r) => r.firstTo,
      },
    ];
    for (const { params, rows, key } of requests)
      for (const order of ['asc', 'desc'] as const) {
        const answer = await viaService(options)({ ...params, order });
        expect(answer.ids, `${JSON.stringify(params)} ${order}`).toEqual(expectedOrder(rows, key, order));
        expect(answer.plan).toBe('sort');
      }
  });

  it('answers over HTTP as the service does, without the plan', async () => {
    const requests: Array<Record<string, string>> = [
      { q: 'common', status: '0,4', sort: 'subject' },
      { status: '3,4', sort: 'status' },
    ];
    for (const params of requests) {
      const query = { ...params, order: 'desc', limit: 7 };
      expect((await walkForward(overHttp, query)).ids).toEqual((await walkForward(viaService(DEFAULT_LIST_OPTIONS), query)).ids);
      expect((await walkBackwardFromLast(overHttp, query)).ids).toEqual((await walkForward(overHttp, query)).ids);
    }
    const { body } = await list({ q: 'common', limit: 3 });
    expect(body).not.toHaveProperty('plan');
    expect(body).not.toHaveProperty('countSource');
  });

  it('sorts To by the first To address; a mail without To sorts as empty', async () => {
    const body = await listOk({ sort: 'to', order: 'asc', limit: 500 });
    const firsts = body.data.map((m) => m.to[0]?.recipientMail ?? '');
    expect(firsts).toEqual([...firsts].sort());
    expect(firsts[0]).toBe('');
    expect(body.data.at(-1)!.to[0]!.recipientMail).toBe('r08@example.com');
  });

  it('date range: from is inclusive, to exclusive, to-only and from-only work', async () => {
    const exactly = (m: number) => seeded.filter((r) => r.receivedAt === T0 + m * 60_000).length;
    expect((await listOk({ receivedFrom: minute(3), receivedTo: minute(4), limit: 500 })).data).toHaveLength(exactly(3));
    expect((await listOk({ receivedFrom: minute(3), receivedTo: minute(3.001), limit: 500 })).data).toHaveLength(exactly(3));
    expect((await listOk({ receivedFrom: minute(39), limit: 500 })).data).toHaveLength(exactly(39));
    expect((await listOk({ receivedTo: minute(1), limit: 500 })).data).toHaveLength(exactly(0));
    const inside = (await listOk({ receivedFrom: minute(3), receivedTo: minute(4) })).data;
    expect(inside.every((m) => m.receivedDate === minute(3))).toBe(true);
  });

  it('refuses a bad date, an empty range or a forged cursor with 400 naming the field', async () => {
    const bad = await list({ receivedFrom: 'yesterday' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('receivedFrom');
    const reversed = await list({ receivedFrom: '2026-11-20T10:00:00Z', receivedTo: '2026-11-20T10:00:00Z' });
    expect(reversed.status).toBe(400);
    expect(reversed.body).toMatchObject({ error: { code: 'invalid_date_range', message: expect.stringContaining('receivedTo') } });
    expect((await list({ sort: 'cc' })).status).toBe(400);
    const forge = (values: unknown[]) => Buffer.from(JSON.stringify(values)).toString('base64url');
    for (const [sort, cursor] of [
      ['receivedDate', forge(['receivedDate', 'desc', 'yesterday', 5, 'next'])],
      ['receivedDate', forge(['receivedDate', 'desc', 1e300, 5, 'next'])],
      ['status', forge(['status', 'desc', 9, 5, 'next'])],
      ['subject', forge(['subject', 'desc', 'a', 1.5, 'next'])],
      ['subject', forge(['subject', 'desc', null, 3, 'prev'])],
      ['subject', forge(['subject', 'desc', null, null, 'next'])],
      ['subject', 'not base64 json'],
    ]) {
      const answer = await list({ sort: sort!, cursor: cursor! });
      expect(answer.status, `${sort} ${cursor}`).toBe(400);
      expect(answer.body).toMatchObject({ error: { code: 'invalid_cursor', message: expect.stringContaining('cursor') } });
    }
  });

  it('offers no last page when page 1 is the only one, and refuses a last-page cursor of another sort', async () => {
    const only = await listOk({ q: 'rarish', limit: 500 });
    expect(only.meta).toMatchObject({ nextCursor: null, prevCursor: null, lastCursor: null });
    const withLast = await listOk({ sort: 'to', limit: 5 });
    const other = await list({ sort: 'subject', limit: 5, cursor: withLast.meta.lastCursor! });
    expect(other.status).toBe(400);
  });
});
