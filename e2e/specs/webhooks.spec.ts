/**
 * Beyond the spec (docs/console.md §10.17): the Webhooks panel in a real browser against the
 * built server: an endpoint created (its secret shown once), a test event sent and its failed attempt in the
 * delivery log (the name does not resolve on this machine, which the log says), replay, disable and delete; the
 * drawer's webhook deliveries; axe clean with the panel open, in light and dark, at 1440×900 and 1024×700.
 */
import { axeViolations } from '../support/axe';
import { expect, test } from '../support/fixtures';
import { forEachLook } from '../support/looks';

test.describe('Webhooks', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  test.describe.configure({ timeout: 120_000 });

  test('Beyond the spec: create an endpoint (secret once), send a test event, read its attempts, replay, disable and delete; axe clean', async ({
    app,
    page,
  }) => {
    const url = `https://hooks-${Date.now().toString(36)}.example.invalid/outbox`;
    await app.login();
    await page.getByRole('button', { name: 'Webhooks' }).click();
    const panel = page.getByRole('dialog', { name: 'Webhooks' });
    await expect(panel).toHaveAttribute('aria-modal', 'true');

    await panel.getByRole('button', { name: 'Add endpoint' }).click();
    const form = panel.getByRole('form', { name: 'New endpoint' });
    await form.getByLabel('URL').fill(url);
    await form.getByLabel('Description').fill('CRM sync');
    await form.getByRole('checkbox', { name: 'mail.sent' }).check();
    await form.getByRole('button', { name: 'Create endpoint' }).click();

    const secret = panel.getByTestId('webhook-secret');
    await expect(secret).toHaveText(/^whsec_[A-Za-z0-9+/=]{20,}$/);
    await expect(panel.getByText(/it is not shown again/)).toBeVisible();
    const row = panel.getByRole('row').filter({ hasText: url });
    await expect(row).toContainText('mail.sent');
    await expect(row).toContainText('All applications');
    await expect(row).toContainText('Enabled');
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'panel with a new secret').toEqual([]);
    await panel.getByRole('button', { name: 'Done' }).click();
    await expect(secret).toHaveCount(0);

    // A test event to this endpoint alone: its name does not resolve here, so the attempt fails and says why.
    await panel.getByRole('button', { name: `Send test to ${url}` }).click();
    await expect(panel.getByText(/Test event evt_\w+ queued/)).toBeVisible();
    await panel.getByRole('button', { name: `Deliveries of ${url}` }).click();
    const log = panel.getByRole('region', { name: 'Delivery log' });
    const delivery = log.getByRole('row').filter({ hasText: 'webhook.test' });
    await expect(delivery).toBeVisible({ timeout: 30_000 });
    await expect(delivery.getByRole('button', { name: /^Attempts \([1-9]\d*\)$/ })).toBeVisible({ timeout: 30_000 });
    await delivery.getByRole('button', { name: /^Attempts/ }).click();
    await expect(log.getByRole('listitem').first()).toContainText(/address|ENOTFOUND|resolve/i);
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'delivery log').toEqual([]);
    await delivery.getByRole('button', { name: /^Replay webhook\.test/ }).click();
    await expect(panel.getByText('1 delivery queued again.')).toBeVisible();

    await panel.getByRole('button', { name: '← Endpoints' }).click();
    await panel.getByRole('button', { name: `Disable ${url}` }).click();
    await expect(row).toContainText('Disabled');
    await panel.getByRole('button', { name: `Delete ${url}` }).click();
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect(row).toHaveCount(0);

    await page.keyboard.press('Escape');
    await expect(panel).toHaveCount(0);
    await expect(page.getByRole('button', { name: 'Webhooks' })).toBeFocused();
  });

  test('Beyond the spec: the panel reads in light and dark at 1440×900 and 1024×700 (screenshots)', async ({ app, page }) => {
    await app.login();
    await forEachLook(page, async ({ scheme, width }) => {
      await page.getByRole('button', { name: 'Webhooks' }).click();
      const panel = page.getByRole('dialog', { name: 'Webhooks' });
      await expect(panel.getByRole('button', { name: 'Add endpoint' })).toBeVisible();
      await panel.getByRole('button', { name: 'Add endpoint' }).click();
      await expect(panel.getByRole('form', { name: 'New endpoint' })).toBeVisible();
      expect(await axeViolations(page, { include: '[role="dialog"]' }), `form ${scheme} ${width}`).toEqual([]);
      await page.screenshot({ path: test.info().outputPath(`webhooks-${scheme}-${width}.png`) });
      await page.keyboard.press('Escape');
      await expect(panel).toHaveCount(0);
    });
  });
});
