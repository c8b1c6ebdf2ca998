/**
 * Beyond the spec (docs/alerts.md): a firing alert shows as a banner in every open console,
 * live. A server of this spec's own runs with WORKER=off, rules evaluated every second and the no-worker rule's
 * pending period at 2 s; a mail submitted while the console is open is due with no worker, so the rule fires and
 * the banner appears through the event stream, without a reload (the fallback poll is 15 s).
 */
import fs from 'node:fs';
import { axeViolations } from '../support/axe';
import { expect, test } from '../support/fixtures';
import { forEachLook } from '../support/looks';
import { startServer } from '../support/server';

const screenshots = '/tmp/alerts-screenshots';

test.describe('Alert banner', () => {
  test.describe.configure({ timeout: 180_000 });

  test('Beyond the spec: no worker while a mail is due → the banner says which rule and since when, live, axe clean; screenshots', async ({
    page,
  }) => {
    const server = await startServer({
      demoCount: 0,
      env: { ALERTS: 'on', ALERT_EVALUATION_INTERVAL: '1s', ALERT_NO_WORKER_FOR: '2s', ALERT_PENDING: '2s' },
    });
    try {
      await page.setViewportSize({ width: 1440, height: 900 });
      await page.goto(`${server.baseURL}/`);
      await page.getByLabel('Username', { exact: true }).fill(server.username);
      await page.getByLabel('Password', { exact: true }).fill(server.password);
      await page.getByRole('button', { name: 'Login', exact: true }).click();
      await expect(page.getByRole('region', { name: 'Queue health' })).toBeVisible();
      const banner = page.getByRole('alert').filter({ hasText: 'Alert:' });
      await expect(banner).toHaveCount(0);
      let reloads = 0;
      page.on('load', () => (reloads += 1));

      const submitted = await fetch(`${server.baseURL}/api/v1/mail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Token ${server.apiKey}` },
        body: JSON.stringify({ fromMail: 'alerts@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'alert', text: 'hi' }),
      });
      expect(submitted.status).toBe(202);
      const submittedAt = Date.now();
      await expect(banner).toContainText('Alert: No worker running', { timeout: 12_000 });
      const seconds = (Date.now() - submittedAt) / 1000;
      console.log(`banner shown ${seconds.toFixed(1)} s after the mail was submitted (evaluation 1 s, pending 2 s, poll 15 s)`);
      expect(reloads).toBe(0);
      await expect(banner).toContainText('No live worker while 1 mail is due');
      await expect(banner.locator('time')).toHaveText(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      await expect(banner).toContainText('since');

      fs.mkdirSync(screenshots, { recursive: true });
      await forEachLook(page, async ({ scheme, width }) => {
        // axe once a scheme: the sizes change the layout, not the colours or the names.
        if (width === 1440) {
          expect(await axeViolations(page, { include: '.alert-banner', impacts: 'all' }), scheme).toEqual([]);
        }
        await expect(banner).toBeInViewport();
        await page.screenshot({ path: `${screenshots}/alert-banner-${width}-${scheme}.png` });
      });
    } finally {
      await server.stop();
    }
  });
});
