/**
 * Screenshots for a human to look at (list, filters, drawer at 1440×900 and 1024×700, light and dark), taken
 * on every run while the same steps check that each view shows at every size and scheme; the images go to
 * e2e/test-results/screenshots/.
 */
import path from 'node:path';
import { expect, test } from '../support/fixtures';

const dir = path.join(import.meta.dirname, '..', 'test-results', 'screenshots');

test.describe('Screenshots', () => {
  test.describe.configure({ timeout: 120_000 });

  for (const scheme of ['light', 'dark'] as const) {
    for (const [width, height] of [
      [1440, 900],
      [1024, 700],
    ] as const) {
      test(`list, filters and drawer at ${width}×${height}, ${scheme}`, async ({ app, page }) => {
        await page.emulateMedia({ colorScheme: scheme });
        await page.setViewportSize({ width, height });
        await app.login();
        await page.screenshot({ path: path.join(dir, `list-${width}-${scheme}.png`) });
        await app.statusChip('ProviderError').click();
        await app.statusChip('Error').click();
        await app.search.fill('example');
        await expect(page.getByTestId('footer-range')).toBeVisible();
        await page.waitForTimeout(800);
        await page.screenshot({ path: path.join(dir, `filters-${width}-${scheme}.png`) });
        await app.cell(app.row(0), 'Subject').click();
        await expect(page.getByRole('dialog').getByRole('heading', { name: 'Event log' })).toBeVisible();
        await page.screenshot({ path: path.join(dir, `drawer-${width}-${scheme}.png`) });
      });
    }
  }
});
