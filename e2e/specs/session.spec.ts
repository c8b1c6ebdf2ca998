import { expect, test } from '../support/fixtures';
import { isList, isLogin } from '../support/traffic';

test.describe('Session', () => {
  test('§4 Session: logged out until login returns a token; the list is loaded once a token is held', async ({ app, traffic }) => {
    await app.open();
    expect(traffic.count(isList), 'no list call without a token').toBe(0);
    const { token, list } = await app.login();
    const login = traffic.find(isLogin)[0]!;
    const lists = traffic.find(isList);
    expect(lists.length).toBeGreaterThanOrEqual(1);
    // The first list call follows the login answer and carries the token that answer held.
    expect(lists[0]!.seq).toBeGreaterThan(login.seq);
    expect(lists[0]!.headers.authorization).toBe(`Token ${token}`);
    expect(list.data.length).toBeGreaterThan(0);
  });

  test('§4 Session: Logout clears token, username and password and returns to the login view', async ({ app, traffic, api, page }) => {
    const { token } = await app.login();
    const mark = traffic.mark();
    await app.logoutButton.click();
    await expect(app.loginHeading).toBeVisible();
    await expect(app.listHeading).toHaveCount(0);
    await expect(app.username).toHaveValue('');
    await expect(app.password).toHaveValue('');

    // Beyond the spec: the console revokes the token on the server (POST /api/v1/logout); wait for that call
    // so every call the logout causes has been made.
    const logout = await traffic.next((c) => c.method === 'POST' && c.path === '/api/v1/logout', mark);
    expect(logout.headers.authorization).toBe(`Token ${token}`);
    expect(await api.listStatusWith(token)).toBe(401);

    // Without a token no list call is made, even when the page regains focus or visibility.
    await page.evaluate(() => {
      window.dispatchEvent(new Event('focus'));
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await expect(app.loginHeading).toBeVisible();
    expect(traffic.count(isList, mark)).toBe(0);
  });

  test('§4 Session: the token is held only in memory (no localStorage, sessionStorage or cookie), so a reload returns to the login view', async ({
    app,
    page,
    traffic,
    context,
  }) => {
    const { token } = await app.login();
    const stored = await page.evaluate(() => {
      const dump = (storage: Storage) =>
        Array.from({ length: storage.length }, (_, i) => `${storage.key(i)}=${storage.getItem(storage.key(i)!)}`);
      return { local: dump(window.localStorage), session: dump(window.sessionStorage), cookie: document.cookie };
    });
    for (const entry of [...stored.local, ...stored.session, stored.cookie]) expect(entry).not.toContain(token);
    const cookies = await context.cookies();
    for (const cookie of cookies) expect(cookie.value).not.toContain(token);

    const mark = traffic.mark();
    await page.reload();
    await expect(app.loginHeading).toBeVisible();
    await expect(app.listHeading).toHaveCount(0);
    await expect(app.username).toHaveValue('');
    await expect(app.password).toHaveValue('');
    expect(traffic.count(isList, mark)).toBe(0);
  });

  test('Beyond the spec (docs/console.md §10.7): a 401 on a call returns to the login view (token revoked behind the console)', async ({
    app,
    api,
    traffic,
    page,
  }) => {
    // The live stream would notice the revocation by itself (live.spec.ts); this test is about a call's 401,
    // so the console sees a server without live updates.
    await page.route('**/api/v1/events', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{}' }));
    const { token } = await app.login();
    expect(await api.revoke(token)).toBe(200);
    const mark = traffic.mark();
    // Any call now answers 401: sorting makes the console fetch the list again.
    await app.columnHeader('Subject').getByRole('button').click();
    const call = await traffic.next(isList, mark);
    expect(call.status).toBe(401);
    await expect(app.loginHeading).toBeVisible();
    await expect(app.listHeading).toHaveCount(0);
    await expect(app.username).toHaveValue('');
  });
});
