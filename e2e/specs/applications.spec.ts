/**
 * Beyond the spec (docs/console.md §10.20): the Applications panel in a real browser against the
 * built server: an application created (its key shown once), a mail submitted with that key over HTTP, the
 * application revoked after a confirmation, and the same key refused with 401; axe clean with the panel open,
 * in light and dark.
 */
import { axeViolations } from '../support/axe';
import { expect, test } from '../support/fixtures';
import { forEachScheme } from '../support/looks';

test.describe('Applications', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  test.describe.configure({ timeout: 120_000 });

  test('Beyond the spec: create an application (key once), submit a mail with its key, revoke it, and the key gets 401; axe clean', async ({
    app,
    api,
    page,
    env,
  }) => {
    const name = `shop-${Date.now().toString(36)}`;
    const submit = async (key: string) => {
      const response = await fetch(`${env.baseURL}/api/v1/mail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Token ${key}` },
        body: JSON.stringify({
          fromMail: 'shop@example.com',
          to: [{ recipientMail: 'ann@example.net' }],
          subject: `From ${name}`,
          text: 'Hi',
        }),
      });
      return { status: response.status, body: (await response.json()) as { data?: Array<{ id: number }>; error?: { code: string } } };
    };
    const submitted: number[] = [];

    await app.login();
    await page.getByRole('button', { name: 'Applications' }).click();
    const panel = page.getByRole('dialog', { name: 'Applications' });
    await expect(panel).toHaveAttribute('aria-modal', 'true');

    await panel.getByRole('button', { name: 'New application' }).click();
    const form = panel.getByRole('form', { name: 'New application' });
    await form.getByLabel('Name').fill(name);
    await form.getByRole('button', { name: 'Create' }).click();

    const keyText = panel.getByTestId('application-key');
    await expect(keyText).toHaveText(/^obx_[A-Za-z0-9_-]{40,}$/);
    await expect(panel.getByText(/it is not shown again/)).toBeVisible();
    await expect(panel.getByRole('button', { name: `Copy the key of ${name}` })).toBeVisible();
    const key = (await keyText.textContent())!;
    const row = panel.getByRole('region', { name: 'Applications' }).getByRole('row').filter({ hasText: name });
    await expect(row).toContainText('Active');
    await expect(row).toContainText('e2e-admin');
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'panel with a new key').toEqual([]);
    await panel.getByRole('button', { name: 'Done' }).click();
    await expect(keyText).toHaveCount(0);

    // The key submits mail; the panel's list shows its use after a refresh.
    const first = await submit(key);
    expect(first.status).toBe(202);
    submitted.push(first.body.data![0]!.id);
    await page.keyboard.press('Escape');
    await expect(panel).toHaveCount(0);
    await page.getByRole('button', { name: 'Applications' }).click();
    // Name, Created (and who made it), Last used, Mails (24 h).
    await expect(row.getByRole('cell').nth(3)).toHaveText('1');

    // Revoke asks first; Keep changes nothing.
    await row.getByRole('button', { name: `Revoke ${name}` }).click();
    await expect(row).toContainText('Its key stops working at once.');
    await row.getByRole('button', { name: 'Keep' }).click();
    const second = await submit(key);
    expect(second.status).toBe(202);
    submitted.push(second.body.data![0]!.id);
    await row.getByRole('button', { name: `Revoke ${name}` }).click();
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'revoke confirmation').toEqual([]);
    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    await expect(panel.getByText(`${name} revoked: its key is refused from now on.`)).toBeVisible();
    await expect(row).toContainText('Revoked');

    const refused = await submit(key);
    expect(refused.status).toBe(401);
    expect(refused.body.error?.code).toBe('invalid_api_key');
    // Out of the shared store again: health.spec, on this server later in a full run, expects no due mail.
    await api.purge(submitted);
  });

  test('Beyond the spec: the panel and its rotate form read in light and dark and fit the panel at 1280 px (axe, screenshots)', async ({
    app,
    page,
  }) => {
    await app.login();
    await forEachScheme(page, async (scheme) => {
      await page.getByRole('button', { name: 'Applications' }).click();
      const panel = page.getByRole('dialog', { name: 'Applications' });
      // The suite's own application (`apikey create e2e`, made by the command line) is always there.
      const row = panel.getByRole('region', { name: 'Applications' }).getByRole('row').filter({ hasText: 'command line' }).first();
      await expect(row).toBeVisible();
      // At the suite's 1280 px the table fits the 960 px panel: nothing hidden to the right, with the row's buttons and
      // with its rotate form open (its focused select once scrolled the table sideways).
      const table = panel.getByRole('region', { name: 'Applications' });
      const hiddenWidth = () => table.evaluate((region) => region.scrollWidth - region.clientWidth);
      expect(page.viewportSize()?.width).toBe(1280);
      expect(await hiddenWidth(), 'pixels of the table past the panel, buttons shown').toBeLessThanOrEqual(0);
      await row.getByRole('button', { name: /^Rotate the key of / }).click();
      await expect(row.getByLabel('Old key keeps working for')).toBeVisible();
      expect(await hiddenWidth(), 'pixels of the table past the panel, rotate form open').toBeLessThanOrEqual(0);
      expect(await table.evaluate((region) => region.scrollLeft), 'the table scrolled sideways').toBe(0);
      expect(await axeViolations(page, { include: '[role="dialog"]' }), `rotate form ${scheme}`).toEqual([]);
      await page.screenshot({ path: test.info().outputPath(`applications-${scheme}.png`) });
      await row.getByRole('button', { name: 'Cancel' }).click();
      await page.keyboard.press('Escape');
      await expect(panel).toHaveCount(0);
    });
  });
});
