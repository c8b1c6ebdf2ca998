/**
 * Beyond the spec (docs/console.md §10.19): the Suppressions panel in a real browser
 * against the built server: an address added with a note and an expiry, found by the search, exported as CSV
 * (fetched with the Authorization header, never a token in a URL), a CSV file imported (one line refused and
 * named), an address removed after the confirmation; the server's list and its audit log agree with what the
 * panel showed. axe clean with the panel open, in light and dark, at 1440×900 and 1024×700 (screenshots).
 */
import { readFile } from 'node:fs/promises';
import type { Page } from '@playwright/test';
import { axeViolations } from '../support/axe';
import { expect as baseExpect, test } from '../support/fixtures';
import { forEachLook } from '../support/looks';
import type { ApiCall, Traffic } from '../support/traffic';

// This machine is shared and loaded (load average near 30 measured while writing this): waits are generous, and
// every wait is for an event (a call answered, a text shown), never for time to pass.
const expect = baseExpect.configure({ timeout: 15_000 });

const isSuppressionList = (call: ApiCall) => call.method === 'GET' && call.path === '/api/v1/suppressions';

/**
 * The server's own list, read with the console's token (from the calls the page made) rather than a second login:
 * what the panel showed is checked against what the server holds.
 */
async function serverList(
  page: Page,
  traffic: Traffic,
  q: string,
): Promise<{ address: string; reason: string; note: string | null; createdBy: string }[]> {
  const authorization = traffic.find(isSuppressionList).at(-1)!.headers.authorization!;
  const response = await page.request.get('/api/v1/suppressions', {
    headers: { authorization },
    params: { q, limit: 500 },
    timeout: 30_000,
  });
  expect(response.status(), 'GET /api/v1/suppressions').toBe(200);
  return ((await response.json()) as { data: { address: string; reason: string; note: string | null; createdBy: string }[] }).data;
}

test.describe('Suppressions', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  test.describe.configure({ timeout: 180_000 });
  test.use({ actionTimeout: 15_000 });

  test('Beyond the spec: add, search, export, import and remove suppressed addresses; the audit log records each change; axe clean', async ({
    app,
    page,
    traffic,
    env,
  }) => {
    // Addresses of this run only, so the search shows nothing but them whatever ran before.
    const stamp = `e2e${Date.now().toString(36)}`;
    const added = `${stamp}-added@example.net`;
    const imported = [`${stamp}-one@example.net`, `${stamp}-two@example.net`];

    await app.login();
    await page.getByRole('button', { name: 'Suppressions' }).click();
    const panel = page.getByRole('dialog', { name: 'Suppressions' });
    await expect(panel).toHaveAttribute('aria-modal', 'true');
    await expect(panel.getByRole('tab', { name: 'Suppressed addresses' })).toHaveAttribute('aria-selected', 'true');
    await expect(panel.getByRole('searchbox', { name: 'Search addresses' })).toBeFocused();
    const table = panel.getByRole('region', { name: 'Suppressed addresses' });
    const rows = table.getByRole('row').filter({ has: page.getByRole('cell') });

    // Add, with a note and an expiry a year ahead (local time in the field, an instant in the call).
    await panel.getByRole('button', { name: 'Add address' }).click();
    const form = panel.getByRole('form', { name: 'Add an address' });
    await expect(form.getByLabel('Address')).toBeFocused();
    await form.getByLabel('Address').fill(added);
    await form.getByLabel('Note (optional)').fill('asked to stop');
    const nextYear = new Date().getFullYear() + 1;
    await form.getByLabel('Expires (optional)').fill(`${nextYear}-06-30T12:00`);
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'add form').toEqual([]);
    await form.getByRole('button', { name: 'Add to the list' }).click();
    await expect(panel.getByRole('status')).toHaveText(`${added} added to the suppression list.`);
    await expect(form).toHaveCount(0);

    // Search: only this run's address.
    await panel.getByRole('searchbox', { name: 'Search addresses' }).fill(stamp);
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toContainText(added);
    await expect(rows.first()).toContainText('Added by hand');
    await expect(rows.first()).toContainText('asked to stop');
    await expect(rows.first()).toContainText(`by ${env.username}`);
    await expect(rows.first().getByRole('time').nth(1)).toHaveAttribute('title', new Date(`${nextYear}-06-30T12:00`).toISOString());
    expect(await serverList(page, traffic, stamp)).toEqual([
      expect.objectContaining({ address: added, reason: 'manual', note: 'asked to stop', createdBy: `operator:${env.username}` }),
    ]);

    // Export the search: fetched with the token in the header, saved from a Blob.
    let mark = traffic.mark();
    const download = page.waitForEvent('download');
    await panel.getByRole('button', { name: 'Download CSV' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe('outbox-suppressions.csv');
    const csv = await readFile((await file.path())!, 'utf8');
    const lines = csv.split('\r\n').filter((line) => line !== '');
    expect(lines[0]).toMatch(/^address,reason,/);
    expect(lines.slice(1)).toEqual([expect.stringMatching(new RegExp(`^${added},manual,,,asked to stop,operator:`))]);
    const csvCall = await traffic.next((c) => isSuppressionList(c) && c.done && c.query.get('format') === 'csv', mark);
    expect(csvCall.query.get('q')).toBe(stamp);
    expect(csvCall.headers.authorization).toMatch(/^Token /);
    expect(csvCall.query.toString()).not.toContain(csvCall.headers.authorization!.slice('Token '.length));

    // Import a file with a header line, two new addresses and one bad line.
    const importFile = `address,note\r\n${imported[0]},from the CRM\r\nnot an address,\r\n${imported[1]},\r\n`;
    await panel.getByLabel('CSV file to import').setInputFiles({ name: 'list.csv', mimeType: 'text/csv', buffer: Buffer.from(importFile) });
    await expect(panel.getByRole('status')).toHaveText('Import done: 2 added, 0 updated, 1 refused.');
    await expect(panel.getByRole('list', { name: 'Refused lines' })).toContainText('Line 3: not an address');
    await expect(rows).toHaveCount(3);
    expect((await serverList(page, traffic, stamp)).map((s) => s.address).sort()).toEqual([added, ...imported].sort());

    // Remove: asks first; Keep leaves it, Remove takes it off the list.
    await panel.getByRole('button', { name: `Remove ${added}` }).click();
    const row = rows.filter({ hasText: added });
    await expect(row).toContainText('Send to it again?');
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'remove confirmation').toEqual([]);
    await row.getByRole('button', { name: 'Keep' }).click();
    await panel.getByRole('button', { name: `Remove ${added}` }).click();
    await row.getByRole('button', { name: 'Remove', exact: true }).click();
    await expect(panel.getByRole('status')).toHaveText(`${added} removed: mail to it is sent again.`);
    await expect(rows).toHaveCount(2);
    expect((await serverList(page, traffic, stamp)).map((s) => s.address).sort()).toEqual([...imported].sort());
    await page.screenshot({ path: test.info().outputPath('suppressions-list.png') });

    // The other tab: the unmatched reports (none on this server: no bounce listener runs).
    mark = traffic.mark();
    await panel.getByRole('tab', { name: 'Unmatched reports' }).click();
    const reportsCall = await traffic.next((c) => c.method === 'GET' && c.path === '/api/v1/bounces' && c.done, mark);
    expect(reportsCall.query.get('matched')).toBe('false');
    await expect(panel.getByRole('region', { name: 'Unmatched bounce reports' })).toContainText('No unmatched reports');
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'unmatched reports').toEqual([]);

    await page.keyboard.press('Escape');
    await expect(panel).toHaveCount(0);
    await expect(page.getByRole('button', { name: 'Suppressions' })).toBeFocused();

    // The audit log: the three changes, newest first, by this operator.
    await page.getByRole('button', { name: 'Audit log' }).click();
    const audit = page.getByRole('dialog', { name: 'Audit log' });
    mark = traffic.mark();
    await audit.getByRole('combobox', { name: 'Action' }).selectOption('suppression');
    await traffic.next((c) => c.method === 'GET' && c.path === '/api/v1/audit' && c.done && c.query.get('action') === 'suppression', mark);
    const auditRows = audit.getByRole('row').filter({ has: page.getByRole('cell') });
    const cells = async (index: number) => (await auditRows.nth(index).getByRole('cell').allTextContents()).slice(1, 4);
    await expect.poll(() => cells(0)).toEqual([env.username, 'suppression.remove', added]);
    expect(await cells(1)).toEqual([env.username, 'suppression.import', '2 addresses']);
    expect(await cells(2)).toEqual([env.username, 'suppression.add', added]);
  });

  test('Beyond the spec: the panel reads in light and dark at 1440×900 and 1024×700 (screenshots)', async ({ app, page }) => {
    await app.login();
    await forEachLook(page, async ({ scheme, width }) => {
      await page.getByRole('button', { name: 'Suppressions' }).click();
      const panel = page.getByRole('dialog', { name: 'Suppressions' });
      await expect(panel.getByRole('region', { name: 'Suppressed addresses' }).getByRole('row').nth(1)).toBeVisible();
      await panel.getByRole('button', { name: 'Add address' }).click();
      await expect(panel.getByRole('form', { name: 'Add an address' })).toBeVisible();
      expect(await axeViolations(page, { include: '[role="dialog"]' }), `list ${scheme} ${width}`).toEqual([]);
      await page.screenshot({ path: test.info().outputPath(`suppressions-${scheme}-${width}.png`) });
      await panel.getByRole('tab', { name: 'Unmatched reports' }).click();
      await expect(panel.getByRole('region', { name: 'Unmatched bounce reports' })).toBeVisible();
      expect(await axeViolations(page, { include: '[role="dialog"]' }), `reports ${scheme} ${width}`).toEqual([]);
      await page.keyboard.press('Escape');
      await expect(panel).toHaveCount(0);
    });
  });
});
