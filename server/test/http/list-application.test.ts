/**
 * The operators' list filtered to one application (`GET /api/v1/mail/list?application=`): through
 * the HTTP API on a real store (both engines). Only that application's mails, with its own exact total; combined
 * with a status, a search, a date range and every sort; paged forwards, backwards and from the last page with
 * the same cursors as the unfiltered list; `none` for the mails no API key submitted; an unknown id 404, a
 * malformed one 400, and an API key may not use it.
 */
import { MailStatus, type MailListResponse, type SubmitMailRequest } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';

let context: TestContext;
let token: string;
let shopKey: string;
let shopId: number;
let otherId: number;
/** The shop's mails in submission order (oldest first), with their subjects. */
const shopMails: Array<{ id: number; subject: string }> = [];
let otherMail: number;
let seeded: number[];

const SHOP_SUBJECTS = ['Order 3', 'Invoice 1', 'Order 1', 'Receipt 2', 'Invoice 2', 'Order 2', 'Receipt 1'];

const mail = (subject: string): SubmitMailRequest => ({
  fromMail: 'shop@example.com',
  to: [{ recipientName: 'Ann', recipientMail: 'ann@example.net' }],
  subject,
  text: 'Thanks!',
});

async function submit(key: string, subject: string): Promise<number> {
  const response = await context.app.inject({
    method: 'POST',
    url: '/api/v1/mail',
    headers: auth(key),
    payload: JSON.stringify(mail(subject)),
  });
  expect(response.statusCode, response.body).toBe(202);
  return (response.json() as { data: Array<{ id: number }> }).data[0]!.id;
}

const get = (key: string, url: string) => context.app.inject({ method: 'GET', url, headers: auth(key) });

async function list(query: string): Promise<MailListResponse> {
  const response = await get(token, `/api/v1/mail/list${query}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as MailListResponse;
}

const idsOf = (page: MailListResponse) => page.data.map((m) => m.id);

beforeAll(async () => {
  context = await createTestContext();
  shopKey = await context.services.auth.createApiKey('shop');
  const otherKey = await context.services.auth.createApiKey('other');
  shopId = (await context.services.auth.findApiKeyPrincipal(shopKey))!.id;
  otherId = (await context.services.auth.findApiKeyPrincipal(otherKey))!.id;
  token = await loginAs(context);
  // Interleaved with the other application's mails, one clock tick apart, so received order is submission order.
  for (const subject of SHOP_SUBJECTS) {
    shopMails.push({ id: await submit(shopKey, subject), subject });
    context.clock.advance(1000);
    if (shopMails.length % 3 === 0) {
      otherMail = await submit(otherKey, `Other ${subject}`);
      context.clock.advance(1000);
    }
  }
  seeded = await seedMails(context.store, [{ subject: 'Order from the console' }, { subject: 'Demo' }]);
});

afterAll(async () => {
  await context.close();
});

describe('the list filtered to one application', () => {
  it("lists that application's mails alone, newest first, with their exact total", async () => {
    const page = await list(`?application=${shopId}&limit=50`);
    expect(idsOf(page)).toEqual(shopMails.map((m) => m.id).reverse());
    expect(page.meta.total).toBe(SHOP_SUBJECTS.length);
    expect(page.meta.totalIsLowerBound).toBe(false);
    expect(page.meta.nextCursor).toBeNull();

    const other = await list(`?application=${otherId}&limit=50`);
    expect(idsOf(other)).toContain(otherMail);
    expect(other.meta.total).toBe(2);
    expect(other.data.every((m) => m.subject.startsWith('Other '))).toBe(true);
  });

  it('pages forwards, back and from the last page with the cursors it gives', async () => {
    const newestFirst = shopMails.map((m) => m.id).reverse();
    const first = await list(`?application=${shopId}&limit=3`);
    expect(idsOf(first)).toEqual(newestFirst.slice(0, 3));
    expect(first.meta.prevCursor).toBeNull();
    const second = await list(`?application=${shopId}&limit=3&cursor=${first.meta.nextCursor}`);
    expect(idsOf(second)).toEqual(newestFirst.slice(3, 6));
    const third = await list(`?application=${shopId}&limit=3&cursor=${second.meta.nextCursor}`);
    expect(idsOf(third)).toEqual(newestFirst.slice(6));
    expect(third.meta.nextCursor).toBeNull();
    const back = await list(`?application=${shopId}&limit=3&cursor=${second.meta.prevCursor}`);
    expect(idsOf(back)).toEqual(newestFirst.slice(0, 3));
    const last = await list(`?application=${shopId}&limit=3&cursor=${first.meta.lastCursor}`);
    expect(idsOf(last)).toEqual(newestFirst.slice(4));
    expect(last.meta.nextCursor).toBeNull();
  });

  it('sorts by subject both ways and pages in that order', async () => {
    const bySubject = [...shopMails].sort((a, b) => (a.subject < b.subject ? -1 : 1)).map((m) => m.id);
    const ascending = await list(`?application=${shopId}&sort=subject&order=asc&limit=50`);
    expect(idsOf(ascending)).toEqual(bySubject);
    const descending = await list(`?application=${shopId}&sort=subject&order=desc&limit=4`);
    expect(idsOf(descending)).toEqual([...bySubject].reverse().slice(0, 4));
    const rest = await list(`?application=${shopId}&sort=subject&order=desc&limit=4&cursor=${descending.meta.nextCursor}`);
    expect(idsOf(rest)).toEqual([...bySubject].reverse().slice(4));
  });

  it('combines with a search and a received range', async () => {
    const orders = await list(`?application=${shopId}&q=order&limit=50`);
    const expected = shopMails.filter((m) => m.subject.startsWith('Order')).map((m) => m.id);
    expect(idsOf(orders).sort((a, b) => a - b)).toEqual(expected);
    expect(orders.meta.total).toBe(3);
    // The console's "Order from the console" matches the search but is no application's.
    expect(idsOf(orders)).not.toContain(seeded[0]);

    const all = (await list(`?application=${shopId}&limit=50`)).data;
    const receivedOf = (id: number) => all.find((m) => m.id === id)!.receivedDate!;
    const from = receivedOf(shopMails[2]!.id);
    const to = receivedOf(shopMails[5]!.id);
    const range = await list(`?application=${shopId}&receivedFrom=${from}&receivedTo=${to}&limit=50`);
    expect(idsOf(range)).toEqual(
      shopMails
        .slice(2, 5)
        .map((m) => m.id)
        .reverse(),
    );
    expect(range.meta.total).toBe(3);
  });

  it('combines with a status: a dequeued mail of the application and none of the others', async () => {
    const dequeued = shopMails[1]!.id;
    const response = await context.app.inject({ method: 'POST', url: `/api/v1/mail/${dequeued}/dequeue`, headers: auth(token) });
    expect(response.statusCode, response.body).toBe(200);
    const status = (await list(`?application=${shopId}&limit=50`)).data.find((m) => m.id === dequeued)!.status;
    expect(status).not.toBe(MailStatus.Queued);

    const ofStatus = await list(`?application=${shopId}&status=${status}&limit=50`);
    expect(idsOf(ofStatus)).toEqual([dequeued]);
    expect(ofStatus.meta.total).toBe(1);
    const queued = await list(`?application=${shopId}&status=${MailStatus.Queued}&limit=50`);
    expect(idsOf(queued)).not.toContain(dequeued);
    expect(queued.meta.total).toBe(SHOP_SUBJECTS.length - 1);
    expect((await list(`?application=${otherId}&status=${status}&limit=50`)).data).toEqual([]);
  });

  it('lists the mails no API key submitted with application=none', async () => {
    const none = await list('?application=none&limit=50');
    expect(idsOf(none).sort((a, b) => a - b)).toEqual(seeded);
    expect(none.meta.total).toBe(2);
  });

  it('answers an unknown application 404, a malformed one 400, and an API key 400', async () => {
    const unknown = await get(token, '/api/v1/mail/list?application=987654');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: { code: 'application_not_found' } });
    const malformed = await get(token, '/api/v1/mail/list?application=shop');
    expect(malformed.statusCode).toBe(400);
    expect((malformed.json() as { error: { message: string } }).error.message).toContain('query.application');
    const byKey = await get(shopKey, `/api/v1/mail/list?application=${shopId}`);
    expect(byKey.statusCode).toBe(400);
    expect(byKey.json()).toMatchObject({ error: { code: 'invalid_query' } });
    expect((byKey.json() as { error: { message: string } }).error.message).toContain('query.application');
  });
});
