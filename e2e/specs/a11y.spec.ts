/**
 * Beyond the spec: axe-core on the login view, the list, a filtered list and the open detail
 * drawer (no serious or critical violations); the skip link and the `/` shortcut.
 */
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expect, test } from '../support/fixtures';
import { isList } from '../support/traffic';

/** One axe run takes 2–10 s; one that has not ended in a minute is a page that stopped answering. */
const AXE_RUN_DEADLINE_MS = 60_000;

async function seriousViolations(page: Page) {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`axe-core did not finish within ${AXE_RUN_DEADLINE_MS / 1000} s: the page stopped answering evaluate`)),
      AXE_RUN_DEADLINE_MS,
    );
  });
  const analysis = new AxeBuilder({ page }).analyze();
  // Past the deadline the analysis still ends, in an error once the page is closed: nobody waits for it then.
  analysis.catch(() => undefined);
  const results = await Promise.race([analysis, deadline]).finally(() => clearTimeout(timer));
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.nodes.length} × ${violation.nodes[0]?.target.join(' ')}`);
}

test.describe('Accessibility', () => {
  // axe-core walks the whole page four times; a busy two-core machine needs more than the default 30 s.
  test.describe.configure({ timeout: 180_000 });

  test('Beyond the spec: axe-core finds no serious or critical violation on login, list, filtered list and the detail drawer', async ({
    app,
    page,
    traffic,
  }) => {
    await app.open();
    expect(await seriousViolations(page), 'login view').toEqual([]);
    await app.login();
    expect(await seriousViolations(page), 'list').toEqual([]);
    const mark = traffic.mark();
    await app.statusChip('ProviderError').click();
    await app.expectRows(await traffic.nextList(mark));
    expect(await seriousViolations(page), 'filtered list').toEqual([]);
    await app.cell(app.row(0), 'Subject').click();
    await expect(page.getByRole('dialog')).toBeVisible();
    await expect(page.getByRole('dialog').getByRole('heading', { name: 'Event log' })).toBeVisible();
    expect(await seriousViolations(page), 'detail drawer').toEqual([]);
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
