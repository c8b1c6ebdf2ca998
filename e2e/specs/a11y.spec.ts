/**
 * Beyond the spec: axe-core on the login view, the list, a filtered list and the open detail
 * drawer (no serious or critical violations); the skip link and the `/` shortcut.
 */
import { axeViolations } from '../support/axe';
import { expect, test } from '../support/fixtures';
import { isList } from '../support/traffic';

test.describe('Accessibility', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  // axe-core walks the whole page four times; a busy two-core machine needs more than the default 30 s.
  test.describe.configure({ timeout: 180_000 });

  test('Beyond the spec: axe-core finds no serious or critical violation on login, list, filtered list and the detail drawer', async ({
    app,
    page,
    traffic,
  }) => {
    await app.open();
    expect(await axeViolations(page), 'login view').toEqual([]);
    await app.login();
    expect(await axeViolations(page), 'list').toEqual([]);
    const mark = traffic.mark();
    await app.statusChip('ProviderError').click();
    await app.expectRows(await traffic.nextList(mark));
    expect(await axeViolations(page), 'filtered list').toEqual([]);
    await app.cell(app.row(0), 'Subject').click();
    await expect(page.getByRole('dialog')).toBeVisible();
    await expect(page.getByRole('dialog').getByRole('heading', { name: 'Event log' })).toBeVisible();
    expect(await axeViolations(page), 'detail drawer').toEqual([]);
  });

  test('Beyond the spec: a skip link leads to the table; `/` focuses the search box', async ({ app, page, traffic }) => {
    await app.login();
    await page.locator('body').click({ position: { x: 5, y: 300 } });
    await page.keyboard.press('/');
    await expect(app.search).toBeFocused();
    // Typing `/` inside the search box is just a character.
    await page.keyboard.type('a/b');
    await expect(app.search).toHaveValue('a/b');
    const mark = traffic.mark();
    await page.keyboard.press('Escape');
    await expect(app.search).toHaveValue('');
    // A list the cleared search asks for is let finish before the page is left; often none is asked (the
    // search is back to what was listed), so the wait is short and its end is not an error.
    await traffic.next((c) => isList(c) && c.done, mark, 2_000).catch(() => undefined);

    await page.goto('about:blank');
    await app.login();
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to the mails table' });
    await expect(skip).toBeFocused();
    await expect(skip).toBeVisible();
    await page.keyboard.press('Enter');
    await expect(app.row(0)).toBeFocused();
  });
});
