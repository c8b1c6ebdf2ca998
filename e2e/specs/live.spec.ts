/**
 * Live updates in Chromium: rows change in place within 1 s of a change made elsewhere,
 * with no list call; new mails wait behind an "N new — show" button; the background tab's title counts new
 * failures; a dropped stream says so and comes back by itself. Deliveries need a worker: those tests run
 * against a server of their own (worker on, capture relay, fast retries), the others against the suite's.
 */
import type { Page } from '@playwright/test';
import type { Mail } from '@outbox/contract';
import { Status } from '../support/api';
import { SELECT_COLUMNS } from '../support/console';
import { expect, test } from '../support/fixtures';
import { startServer, type RunningServer } from '../support/server';
import { isList, Traffic } from '../support/traffic';

const PAUSED = 'Live updates paused — reconnecting…';

test.describe('Live updates on the suite server', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  test('a row changes in place within 1 s of a dequeue made through the API (its button follows), with no list call, and the counts follow', async ({
    app,
    api,
    traffic,
  }) => {
    const login = await app.login();
    const { mail } = await app.showStatus(login.list, Status.Queued);
    const row = app.rowOf(mail);
    await expect(row.getByRole('button', { name: `Dequeue mail #${mail.id}` })).toBeVisible();
    const queuedChip = await app.statusChip('Queued').textContent();
    // The stream is open before the change (it opens with the list).
    await expect.poll(() => traffic.find((c) => c.path === '/api/v1/events' && c.status === 200).length).toBeGreaterThan(0);
    const mark = traffic.mark();
    const startedAt = Date.now();
    expect(await api.dequeue(mail.id)).toBe(200);
    await expect(app.cell(row, 'Status')).toHaveText('Dequeued', { timeout: 1000 });
    console.log(`[live] dequeue through the API → row shows Dequeued: ${Date.now() - startedAt} ms`);
    await expect(row.getByRole('button', { name: `Delete mail #${mail.id}` })).toBeVisible();
    await expect(app.statusChip('Queued')).not.toHaveText(queuedChip!);
    expect(traffic.find(isList, mark)).toEqual([]);
  });

  test('a session revoked behind the console ends its stream, and the console returns to the login view by itself', async ({
    app,
    api,
    traffic,
  }) => {
    const { token } = await app.login();
    await expect.poll(() => traffic.find((c) => c.path === '/api/v1/events' && c.status === 200).length).toBeGreaterThan(0);
    const mark = traffic.mark();
    expect(await api.revoke(token)).toBe(200);
    // The server ends the stream at once; the console's reconnect gets 401, which ends the session.
    await expect(app.loginHeading).toBeVisible({ timeout: 10_000 });
    expect(traffic.find((c) => c.path === '/api/v1/events', mark).map((c) => c.status)).toContain(401);
  });

  test('new mails wait behind an "N new — show" button instead of moving rows; it loads page 1 with them', async ({
    app,
    api,
    env,
    traffic,
    page,
  }) => {
    await app.login();
    await expect.poll(() => traffic.find((c) => c.path === '/api/v1/events' && c.status === 200).length).toBeGreaterThan(0);
    const before = await app.dataRows.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-mail-id')));
    const mark = traffic.mark();
    const submitted: Mail[] = [];
    for (const n of [1, 2]) {
      submitted.push(
        await api.submit(env.apiKey, {
          fromMail: 'live@example.com',
          to: [{ recipientMail: `new${n}@example.net` }],
          subject: `Live ${n}`,
          text: 'x',
        }),
      );
    }
    const show = page.getByRole('button', { name: '2 new — show' });
    await expect(show).toBeVisible();
    expect(await app.dataRows.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-mail-id')))).toEqual(before);
    expect(traffic.find(isList, mark)).toEqual([]);
    await show.click();
    const list = await traffic.nextList(mark);
    await app.expectRows(list);
    expect(list.data.slice(0, 2).map((m) => m.id)).toEqual(submitted.map((m) => m.id).reverse());
    await expect(page.getByRole('button', { name: /new — show$/ })).toHaveCount(0);
  });
});

test.describe('Live updates with deliveries (a server of its own, worker on)', () => {
  let server: RunningServer;

  test.beforeAll(async () => {
    // A server start waits up to 120 s for /healthz on a loaded machine (support/server.ts); a hook's own
    // timeout is the config's 30 s unless set here.
    test.setTimeout(180_000);
    server = await startServer({ demoCount: 0, env: { WORKER: 'on', RETRY_BASE_DELAY: '2s', RETRY_MAX_ATTEMPTS: '2' } });
  });
  test.afterAll(async () => {
    await server?.stop();
  });

  /** Logs in and waits until the live stream is open (the server answers once the stream is registered). */
  async function loginTo(page: Page): Promise<string> {
    await page.goto(server.baseURL);
    // Generous: the login hashes a password (argon2id), seconds at load 30 on two cores, before the stream opens.
    const stream = page.waitForResponse((r) => r.url().endsWith('/api/v1/events') && r.status() === 200, { timeout: 30_000 });
    await page.getByLabel('Username', { exact: true }).fill(server.username);
    await page.getByLabel('Password', { exact: true }).fill(server.password);
    const answer = page.waitForResponse((r) => r.url().endsWith('/api/v1/login'), { timeout: 30_000 });
    await page.getByRole('button', { name: 'Login', exact: true }).click();
    const body = (await (await answer).json()) as { data: { token: string }[] };
    await expect(page.getByRole('heading', { name: 'MAILS LIST' })).toBeVisible();
    await stream;
    return body.data[0]!.token;
  }

  async function submit(to: string, subject: string): Promise<number> {
    const response = await fetch(`${server.baseURL}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${server.apiKey}` },
      body: JSON.stringify({ fromMail: 'live@example.com', to: [{ recipientMail: to }], subject, text: 'x' }),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { data: Mail[] }).data[0]!.id;
  }

  const rowOf = (page: Page, id: number) => page.locator(`#mails-grid tr[data-mail-id="${id}"]`);
  const statusOf = (page: Page, id: number) =>
    rowOf(page, id)
      .getByRole('gridcell')
      .nth(SELECT_COLUMNS + 3);

  test('a mail shown while its delivery is retried turns to ProviderError in place when the worker gives up, with no list call', async ({
    page,
  }) => {
    const traffic = new Traffic(page);
    await loginTo(page);
    const id = await submit('someone@defer.test', 'Deferred twice');
    await page.getByRole('button', { name: '1 new — show' }).click();
    await expect(rowOf(page, id)).toHaveCount(1);
    const mark = traffic.mark();
    // The first attempt was deferred (451): Queued until the retry 2 s later, deferred again: the worker gives
    // up (ProviderError, the relay's last word was a refusal).
    await expect(statusOf(page, id)).toHaveText('ProviderError', { timeout: 10_000 });
    await expect(rowOf(page, id).getByRole('button', { name: `Delete mail #${id}` })).toBeVisible();
    expect(traffic.find(isList, mark)).toEqual([]);
  });

  test('the tab title counts new failures while the tab is hidden, and goes back when it is shown', async ({ page }) => {
    await loginTo(page);
    await expect(page).toHaveTitle('Outbox console');
    const setVisibility = (state: 'hidden' | 'visible') =>
      page.evaluate((value) => {
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => value });
        Object.defineProperty(document, 'hidden', { configurable: true, get: () => value === 'hidden' });
        document.dispatchEvent(new Event('visibilitychange'));
      }, state);
    await setVisibility('hidden');
    await submit('nobody@reject.test', 'Refused 1');
    await expect(page).toHaveTitle('(1) Outbox console');
    await submit('nobody@reject.test', 'Refused 2');
    await submit('fine@example.net', 'Delivered');
    await expect(page).toHaveTitle('(2) Outbox console');
    await setVisibility('visible');
    await expect(page).toHaveTitle('Outbox console');
  });

  test('when the server drops the stream the console says so, reconnects by itself, and updates rows again', async ({ page }) => {
    // A restart of the built server takes several seconds on a busy machine; the console retries every ≤10 s.
    test.setTimeout(90_000);
    await loginTo(page);
    const status = page.getByRole('status').filter({ hasText: PAUSED });
    await expect(status).toHaveCount(0);
    const id = await submit('someone@defer.test', 'Across a restart');
    await page.getByRole('button', { name: /1 new — show/ }).click();
    await expect(rowOf(page, id)).toHaveCount(1);
    const restarted = server.restart({ downMs: 1500 });
    await expect(status).toBeVisible({ timeout: 10_000 });
    await restarted;
    await expect(status).toHaveCount(0, { timeout: 20_000 });
    // Still live: the retry after the restart gives up and the row says so in place.
    await expect(statusOf(page, id)).toHaveText('ProviderError', { timeout: 15_000 });
  });
});
