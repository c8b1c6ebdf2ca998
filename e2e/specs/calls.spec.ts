import type { MailListResponse } from '@outbox/contract';
import { Status } from '../support/api';
import { expect, test } from '../support/fixtures';
import { isDeleteOf, isDequeueOf, isList, isLogin, type ApiCall } from '../support/traffic';

const JSON_TYPE = /^application\/json\b/;

function expectMailCallHeaders(call: ApiCall, token: string) {
  expect(call.headers['authorization']).toBe(`Token ${token}`);
  expect(call.headers['content-type']).toMatch(JSON_TYPE);
}

test.describe('The calls (§7)', () => {
  // Each test starts from app.login(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });

  test('§7 Login call: POST /api/v1/login, Content-Type JSON, body {username, password}; data[0].token is taken as the token', async ({
    app,
    traffic,
    env,
  }) => {
    const { token } = await app.login();
    const [login] = traffic.find(isLogin);
    expect(login).toBeDefined();
    expect(login!.method).toBe('POST');
    expect(login!.headers['content-type']).toMatch(JSON_TYPE);
    expect(login!.headers['authorization']).toBeUndefined();
    expect(JSON.parse(login!.payload ?? 'null')).toEqual({ username: env.username, password: env.password });
    expect(login!.status).toBe(200);
    const answer = login!.body as { data: { token: string }[] };
    expect(answer.data[0]!.token).toBe(token);
    // That token is what the next call carries.
    const [list] = traffic.find(isList, login!.seq);
    expectMailCallHeaders(list!, answer.data[0]!.token);
  });

  test('§7 List call: GET /api/v1/mail/list with Authorization: Token {token} and Content-Type JSON, no payload; its data are the rows', async ({
    app,
    traffic,
  }) => {
    const { token, list } = await app.login();
    const [call] = traffic.find(isList);
    expect(call!.method).toBe('GET');
    expectMailCallHeaders(call!, token);
    expect(call!.payload).toBeNull();
    expect(call!.status).toBe(200);
    expect((call!.body as MailListResponse).data.map((mail) => mail.id)).toEqual(list.data.map((mail) => mail.id));
    await app.expectRows(list);
  });

  test('§7 Dequeue call: GET /api/v1/mail/{id}/dequeue with Authorization: Token {token}; the list is fetched again after it', async ({
    app,
    traffic,
  }) => {
    const login = await app.login();
    const { mail } = await app.showStatus(login.list, Status.Queued);
    const mark = traffic.mark();
    await app
      .rowOf(mail)
      .getByRole('button', { name: /^Dequeue mail #\d+$/ })
      .click();
    const call = await traffic.next(isDequeueOf(mail.id), mark);
    expect(call.method).toBe('GET');
    expect(call.path).toBe(`/api/v1/mail/${mail.id}/dequeue`);
    expectMailCallHeaders(call, login.token);
    expect(call.payload).toBeNull();
    expect(call.status).toBe(200);
    // The only mail call the click made, then the list again.
    expect(traffic.find((c) => c.path.startsWith('/api/v1/mail/') && !isList(c), mark)).toEqual([call]);
    const again = await traffic.next(isList, call.seq);
    expectMailCallHeaders(again, login.token);
    await app.expectRows(again.body as MailListResponse);
  });

  test('§7 Delete call: DELETE /api/v1/mail/{id} with Authorization: Token {token}; the list is fetched again after it', async ({
    app,
    traffic,
  }) => {
    const login = await app.login();
    const { mail } = await app.showStatus(login.list, Status.ProviderSent);
    const mark = traffic.mark();
    await app
      .rowOf(mail)
      .getByRole('button', { name: /^Delete mail #\d+$/ })
      .click();
    const call = await traffic.next(isDeleteOf(mail.id), mark);
    expect(call.method).toBe('DELETE');
    expect(call.path).toBe(`/api/v1/mail/${mail.id}`);
    expectMailCallHeaders(call, login.token);
    expect(call.payload).toBeNull();
    expect(call.status).toBe(200);
    expect(traffic.find((c) => c.path.startsWith('/api/v1/mail/') && !isList(c), mark)).toEqual([call]);
    const again = await traffic.next(isList, call.seq);
    expectMailCallHeaders(again, login.token);
    await app.expectRows(again.body as MailListResponse);
  });

  test('§7 The answers of delete and dequeue are not read: a success whose body is not JSON is still a success (no alert)', async ({
    app,
    page,
    traffic,
    api,
    alerts,
  }) => {
    // page.route only to swap the body: the real server does the work (route.fetch), but it never answers
    // with a body that is not JSON, which is what shows the console does not read it.
    const garble = async (route: Parameters<Parameters<typeof page.route>[1]>[0]) => {
      const response = await route.fetch();
      await route.fulfill({ response, body: 'this is not JSON', contentType: 'text/plain' });
    };
    await page.route(/\/api\/v1\/mail\/\d+(\/dequeue)?$/, garble);
    const login = await app.login();

    const queued = await app.showStatus(login.list, Status.Queued);
    let mark = traffic.mark();
    await app
      .rowOf(queued.mail)
      .getByRole('button', { name: /^Dequeue mail #\d+$/ })
      .click();
    const dequeue = await traffic.next(isDequeueOf(queued.mail.id), mark);
    expect([dequeue.status, dequeue.body]).toEqual([200, 'this is not JSON']);
    await app.expectRows(await traffic.nextList(dequeue.seq));
    await expect(app.cell(app.rowOf(queued.mail), 'Status')).toHaveText('Dequeued');

    const sent = await app.showStatus(app.shown!, Status.ProviderSent);
    mark = traffic.mark();
    await app
      .rowOf(sent.mail)
      .getByRole('button', { name: /^Delete mail #\d+$/ })
      .click();
    const remove = await traffic.next(isDeleteOf(sent.mail.id), mark);
    expect([remove.status, remove.body]).toEqual([200, 'this is not JSON']);
    await app.expectRows(await traffic.nextList(remove.seq));
    await expect(app.rowOf(sent.mail)).toHaveCount(0);
    expect(await api.ids()).not.toContain(sent.mail.id);
    expect(alerts.seen).toEqual([]);
  });
});
