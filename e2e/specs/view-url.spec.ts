/**
 * Beyond the spec (docs/console.md §10.11): the view (filters, search, sort, page) lives in the URL so
 * it can be shared; the token stays in memory, so a shared link shows the login view first, then that view.
 */
import { expect, test } from '../support/fixtures';
import { isList } from '../support/traffic';

test.describe('The view in the URL', () => {
  test('Beyond the spec: filters, search, sort and page go into the address; a shared link shows login, then that view', async ({
    app,
    page,
    traffic,
    browser,
    env,
  }) => {
    const { token, list } = await app.login();
    await app.statusChip('ProviderSent').click();
    await app.statusChip('ProviderError').click();
    const domain = list.data[0]!.to[0]!.recipientMail.split('@')[1]!;
    const mark = traffic.mark();
    await app.search.fill(domain);
    await traffic.next((c) => isList(c) && c.done && c.query.get('q') === domain, mark);
    await app.sortBy('Subject');
    await expect.poll(() => new URL(page.url()).searchParams.get('sort')).toBe('subject');

    const shared = new URL(page.url());
    expect(shared.pathname).toBe('/');
    expect(shared.searchParams.get('status')).toBe('3,4');
    expect(shared.searchParams.get('q')).toBe(domain);
    expect(shared.searchParams.get('order')).toBe('asc');
    // The token never goes into the address.
    expect(shared.href).not.toContain(token);

    // A colleague opens the link in their own browser: no session there.
    const context = await browser.newContext({ baseURL: env.baseURL });
    const other = await context.newPage();
    const calls: URL[] = [];
    other.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === '/api/v1/mail/list') calls.push(url);
    });
    await other.goto(`${shared.pathname}${shared.search}`);
    await expect(other.getByRole('heading', { name: 'LOGIN', exact: true })).toBeVisible();
    expect(calls).toHaveLength(0);
    await other.getByLabel('Username', { exact: true }).fill(env.username);
    await other.getByLabel('Password', { exact: true }).fill(env.password);
    await other.getByRole('button', { name: 'Login', exact: true }).click();
    await expect(other.getByRole('heading', { name: 'MAILS LIST', exact: true })).toBeVisible();
    await expect.poll(() => calls.length).toBeGreaterThan(0);
    const first = calls[0]!;
    expect(first.searchParams.get('status')).toBe('3,4');
    expect(first.searchParams.get('q')).toBe(domain);
    expect(first.searchParams.get('sort')).toBe('subject');
    expect(first.searchParams.get('order')).toBe('asc');
    await expect(other.getByRole('searchbox', { name: 'Search sender, recipients and subject' })).toHaveValue(domain);
    await expect(other.getByRole('group', { name: 'Status' }).getByRole('button', { name: /^ProviderSent[\s\d,]*$/ })).toHaveAttribute(
      'aria-pressed',
      'true',
    );
    await expect(other.getByRole('group', { name: 'Status' }).getByRole('button', { name: /^ProviderError[\s\d,]*$/ })).toHaveAttribute(
      'aria-pressed',
      'true',
    );
    await expect(other.getByRole('columnheader', { name: 'Subject' })).toHaveAttribute('aria-sort', 'ascending');
    // Nothing of the session was written anywhere a reload could find it.
    const stored = await other.evaluate(
      () => JSON.stringify({ ...window.localStorage }) + JSON.stringify({ ...window.sessionStorage }) + document.cookie,
    );
    expect(stored).not.toMatch(/token/i);
    await context.close();
  });

  test('Beyond the spec: a page deep in the list is in the address too, and a reload returns to it after login', async ({
    app,
    page,
    traffic,
  }) => {
    await app.login();
    let mark = traffic.mark();
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    const second = await traffic.nextList(mark);
    await app.expectRows(second);
    await expect.poll(() => new URL(page.url()).searchParams.get('page')).toBe('2');
    const range = await page.getByTestId('footer-range').textContent();

    // Reload: the token is gone (memory only), the view is not.
    await page.reload();
    await expect(app.loginHeading).toBeVisible();
    await app.fillLogin(app.env.username, app.env.password);
    mark = traffic.mark();
    await app.loginButton.click();
    await app.expectRows(await traffic.nextList(mark));
    await expect(page.getByTestId('footer-range')).toHaveText(range!);
    await expect(app.dataRows.first()).toBeVisible();
  });
});
