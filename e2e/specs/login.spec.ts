import { expect, test } from '../support/fixtures';
import { isList, isLogin } from '../support/traffic';

const LOGIN_FAILED = 'Invalid username or password';

test.describe('Login view', () => {
  test('§2 Login view: heading LOGIN, Username field, masked Password field, Login button', async ({ app, page }) => {
    await app.open();
    await expect(app.loginHeading).toBeVisible();
    await expect(page.getByRole('textbox', { name: 'Username', exact: true })).toBeVisible();
    await expect(app.username).toHaveAttribute('type', 'text');
    await expect(app.password).toBeVisible();
    await expect(app.password).toHaveAttribute('type', 'password');
    await expect(app.loginButton).toBeVisible();
    await expect(app.loginButton).toBeEnabled();
    // Nothing of the list view while no token is held (§2 / §4).
    await expect(app.listHeading).toHaveCount(0);
    await expect(app.table).toHaveCount(0);
    // A masked field: what is typed is not readable on screen.
    await app.password.fill('hunter2');
    await expect(page.getByText('hunter2')).toHaveCount(0);
  });

  test("§5 Login succeeds only if the server accepts it; §8 login fails → alert 'Invalid username or password'", async ({
    app,
    alerts,
    traffic,
    env,
  }) => {
    await app.open();
    await app.fillLogin(env.username, `${env.password}-wrong`);
    const mark = traffic.mark();
    await app.loginButton.click();
    const dialog = await alerts.next();
    expect(dialog).toEqual({ type: 'alert', message: LOGIN_FAILED });
    const [call] = traffic.find(isLogin, mark);
    expect(call?.status).toBe(401);
    await expect(app.loginHeading).toBeVisible();
    await expect(app.listHeading).toHaveCount(0);
    expect(traffic.count(isList)).toBe(0);

    // The same view, now with the password the server accepts: the list view follows.
    await app.password.fill(env.password);
    await app.loginButton.click();
    await expect(app.listHeading).toBeVisible();
    await expect(app.loginHeading).toHaveCount(0);
  });

  test('§5 No client-side validation: empty Username and Password are still sent to the server', async ({ app, alerts, traffic }) => {
    await app.open();
    await expect(app.username).toHaveValue('');
    await expect(app.password).toHaveValue('');
    const mark = traffic.mark();
    await app.loginButton.click();
    const call = await traffic.next(isLogin, mark);
    expect(JSON.parse(call.payload ?? 'null')).toEqual({ username: '', password: '' });
    expect(call.status).toBeGreaterThanOrEqual(400);
    // §8: any login failure is the same alert.
    expect(await alerts.next()).toEqual({ type: 'alert', message: LOGIN_FAILED });
    await expect(app.loginHeading).toBeVisible();
    // No browser-side validation either (no `required`, no validation bubble blocked the submit).
    await expect(app.username).not.toHaveAttribute('required');
    await expect(app.password).not.toHaveAttribute('required');
  });

  test('§5 A token that is an empty string is not a login: the login view stays and the list is not loaded', async ({
    app,
    alerts,
    traffic,
    page,
    env,
  }) => {
    // page.route only because the real server never answers a login with an empty token.
    await page.route('**/api/v1/login', (route) =>
      route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ data: [{ token: '', username: env.username, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }] }),
      }),
    );
    await app.open();
    await app.fillLogin(env.username, env.password);
    const mark = traffic.mark();
    await app.loginButton.click();
    const call = await traffic.next(isLogin, mark);
    expect(call.status).toBe(200);
    // The console treats the answer as a failed login (§8: login fails, any error → the alert).
    expect(await alerts.next()).toEqual({ type: 'alert', message: LOGIN_FAILED });
    await expect(app.loginHeading).toBeVisible();
    await expect(app.listHeading).toHaveCount(0);
    expect(traffic.count(isList)).toBe(0);
  });

  test('Beyond the spec (docs/console.md §10.4): the login form is keyboard reachable (Tab to each field and the Login button, Enter logs in)', async ({
    app,
    page,
    env,
    traffic,
  }) => {
    await app.open();
    await page.keyboard.press('Tab');
    await expect(app.username).toBeFocused();
    await page.keyboard.type(env.username);
    await page.keyboard.press('Tab');
    await expect(app.password).toBeFocused();
    await page.keyboard.type(env.password);
    await page.keyboard.press('Tab');
    await expect(app.loginButton).toBeFocused();
    const mark = traffic.mark();
    await page.keyboard.press('Enter');
    const list = await traffic.nextList(mark);
    await app.expectRows(list);
  });
});
