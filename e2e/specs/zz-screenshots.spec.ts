/**
 * Screenshots for a human to look at (list, the list scrolled to row 31, filters, drawer, the bulk bar and confirmation, health strip
 * and audit panel, at 1440×900 and 1024×700, light and dark), taken
 * on every run while the same steps check that each view shows at every size and scheme; the images go to
 * e2e/test-results/screenshots/.
 */
import path from 'node:path';
import type { MailListResponse } from '@outbox/contract';
import { expect, test } from '../support/fixtures';
import { SCHEMES, SIZES } from '../support/looks';
import { isList } from '../support/traffic';

const dir = path.join(import.meta.dirname, '..', 'test-results', 'screenshots');

test.describe('Screenshots', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  test.describe.configure({ timeout: 180_000 });

  for (const scheme of SCHEMES) {
    for (const [width, height] of SIZES) {
      test(`list, filters and drawer at ${width}×${height}, ${scheme}`, async ({ app, page, traffic }) => {
        await page.emulateMedia({ colorScheme: scheme });
        await page.setViewportSize({ width, height });
        await app.login();
        await page.screenshot({ path: path.join(dir, `list-${width}-${scheme}.png`) });
        // The virtualized body scrolled to the middle of the page: the rows drawn there sit in place (§10.1).
        await app.scrollToRow(30);
        await page.screenshot({ path: path.join(dir, `list-scrolled-${width}-${scheme}.png`) });
        await app.scrollToRow(0);
        await app.statusChip('ProviderError').click();
        await app.statusChip('Error').click();
        // The screenshot once the search's answer is drawn (the box is debounced: one call for the word).
        const mark = traffic.mark();
        await app.search.fill('example');
        const searched = await traffic.next((c) => isList(c) && c.status === 200 && c.query.get('q') === 'example', mark);
        await app.expectRows(searched.body as MailListResponse);
        await expect(page.getByTestId('footer-range')).toBeVisible();
        await page.screenshot({ path: path.join(dir, `filters-${width}-${scheme}.png`) });
        await app.cell(app.row(0), 'Subject').click();
        await expect(page.getByRole('dialog').getByRole('heading', { name: 'Event log' })).toBeVisible();
        await page.screenshot({ path: path.join(dir, `drawer-${width}-${scheme}.png`) });
      });

      test(`bulk bar and confirmation, health strip and audit panel at ${width}×${height}, ${scheme}`, async ({ app, api, env, page }) => {
        await page.emulateMedia({ colorScheme: scheme });
        await page.setViewportSize({ width, height });
        // A due mail and no worker (the suite runs WORKER=off): the strip's alarm shows.
        const mail = await api.submit(env.apiKey, {
          fromMail: 'shots@example.com',
          to: [{ recipientMail: 'ann@example.net' }],
          subject: 'shots',
          text: 'hi',
        });
        // The demo's Processing mails read as worker activity for the first minute of the suite's server.
        await expect.poll(async () => (await api.health()).hasLiveWorker, { timeout: 90_000, intervals: [2000] }).toBe(false);
        await app.login();
        await expect(page.getByRole('region', { name: 'Queue health' }).getByRole('alert')).toBeVisible({ timeout: 15_000 });
        await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
        const bar = page.getByRole('toolbar', { name: 'Selected mails' });
        await expect(bar).toBeInViewport();
        const box = (await bar.boundingBox())!;
        expect(box.x + box.width).toBeLessThanOrEqual(width);
        await page.screenshot({ path: path.join(dir, `bulk-bar-${width}-${scheme}.png`) });
        await bar.getByRole('button', { name: 'Delete…' }).click();
        await expect(page.getByRole('dialog').getByTestId('bulk-will-move')).toBeVisible();
        await page.screenshot({ path: path.join(dir, `bulk-confirm-${width}-${scheme}.png`) });
        await page.keyboard.press('Escape');
        await bar.getByRole('button', { name: 'Clear selection' }).click();
        await page.getByRole('button', { name: 'Audit log' }).click();
        await expect(page.getByRole('dialog', { name: 'Audit log' }).getByRole('cell').first()).toBeVisible();
        await page.screenshot({ path: path.join(dir, `audit-${width}-${scheme}.png`) });
        await page.keyboard.press('Escape');
        expect(await api.dequeue(mail.id)).toBe(200);
      });
    }
  }
});
