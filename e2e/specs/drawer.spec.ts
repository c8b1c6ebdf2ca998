/**
 * Beyond the spec (issue 8 item 3): the detail drawer, against the real server with a mail submitted through
 * the real API (so it has a stored message: headers, text and HTML bodies, raw .eml).
 */
import fs from 'node:fs';
import type { Page } from '@playwright/test';
import type { Api } from '../support/api';
import { expect, test } from '../support/fixtures';
import { isList } from '../support/traffic';

async function submitHtmlMail(api: Api, apiKey: string, baseURL: string, subject: string) {
  return api.submit(apiKey, {
    fromName: 'Drawer Test',
    fromMail: 'drawer@example.com',
    to: [{ recipientName: 'Ann Reader', recipientMail: 'ann@example.com' }],
    cc: [{ recipientName: 'Carl Copy', recipientMail: 'carl@example.com' }],
    subject,
    text: 'Plain text body line',
    html:
      `<p id="para">Hello <b>HTML</b></p><img alt="pixel" src="${baseURL}/remote-probe.png?m=${encodeURIComponent(subject)}">` +
      '<script>parent.document.body.dataset.pwned = "yes"; document.body.dataset.ran = "yes";</script>',
    headers: { 'X-Campaign': 'drawer-e2e' },
  });
}

/**
 * Probe images that were really fetched. Chromium's preload scanner may start a request for an <img> before
 * the frame's policy is read; the policy then blocks it (net::ERR_BLOCKED_BY_CSP), but the browser still
 * reports the attempt. Only a request that finished reached the sender, so only those count.
 */
function probeRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on('requestfinished', (request) => {
    if (request.url().includes('/remote-probe.png')) seen.push(request.url());
  });
  return seen;
}

test.describe('The detail drawer', () => {
  test('Beyond the spec: a row click opens the detail (summary, recipients, event log, headers, bodies); the HTML is sandboxed; .eml downloads; Esc closes', async ({
    app,
    api,
    env,
    page,
  }) => {
    const subject = `Drawer ${Date.now()}`;
    const mail = await submitHtmlMail(api, env.apiKey, env.baseURL, subject);
    const probes = probeRequests(page);
    await app.login();
    const row = app.dataRows.filter({ hasText: subject });
    await app.cell(row, 'Subject').click();

    const drawer = page.getByRole('dialog', { name: `Mail #${mail.id}` });
    await expect(drawer).toBeVisible();
    await expect(drawer.getByRole('heading', { name: subject })).toBeVisible();
    await expect(drawer.getByText('Queued', { exact: true })).toBeVisible();
    await expect(drawer.getByRole('row').filter({ hasText: 'ann@example.com' })).toContainText('To');
    await expect(drawer.getByRole('row').filter({ hasText: 'carl@example.com' })).toContainText('Cc');
    await expect(drawer.getByRole('row').filter({ hasText: 'ann@example.com' })).toContainText('pending');
    await expect(drawer.getByRole('row').filter({ hasText: 'accepted' }).first()).toBeVisible(); // the acceptance event
    await expect(drawer.getByText('X-Campaign', { exact: true })).toBeVisible();
    await expect(drawer.getByText('Plain text body line')).toBeVisible();

    // HTML: only in a sandboxed frame without scripts, through srcdoc; its script did not run.
    const frameElement = drawer.locator('iframe[title="HTML body"]');
    await expect(frameElement).toHaveAttribute('sandbox', '');
    expect(await frameElement.getAttribute('srcdoc')).toContain('<b>HTML</b>');
    await expect(page.frameLocator('iframe[title="HTML body"]').locator('#para')).toHaveText('Hello HTML');
    expect(await page.evaluate(() => document.body.dataset.pwned)).toBeUndefined();
    expect(await page.frameLocator('iframe[title="HTML body"]').locator('body').getAttribute('data-ran')).toBeNull();
    // Remote images are blocked until asked for.
    await page.waitForTimeout(500); // nothing to wait for: a request that must not happen
    expect(probes).toHaveLength(0);
    expect(await frameElement.getAttribute('srcdoc')).toContain('img-src data:;');
    await drawer.getByRole('button', { name: 'Load remote images' }).click();
    // The frame's own policy now lets images through. (They load only where the console page's CSP, which the
    // frame inherits, allows them too: today img-src 'self' data:, see docs/limits.md.)
    await expect(drawer.getByText('Remote images are loaded.')).toBeVisible();
    expect(await frameElement.getAttribute('srcdoc')).toContain('img-src data: https: http:;');

    // The raw message downloads as mail-{id}.eml.
    const [download] = await Promise.all([page.waitForEvent('download'), drawer.getByRole('button', { name: 'Download .eml' }).click()]);
    expect(download.suggestedFilename()).toBe(`mail-${mail.id}.eml`);
    const eml = fs.readFileSync((await download.path())!, 'utf8');
    expect(eml).toContain(`Subject: ${subject}`);

    // Esc closes it and focus goes back to the mail's row.
    await page.keyboard.press('Escape');
    await expect(drawer).toHaveCount(0);
    await expect(row).toBeFocused();
    // Enter on the focused row opens it again.
    await page.keyboard.press('Enter');
    await expect(drawer).toBeVisible();
    await drawer.getByRole('button', { name: 'Close detail' }).click();
    await expect(drawer).toHaveCount(0);
  });

  test("Beyond the spec: the drawer's Dequeue, Requeue and Delete act on the mail shown, with the spec's alert on failure", async ({
    app,
    api,
    env,
    page,
    traffic,
    alerts,
  }) => {
    const subject = `Drawer actions ${Date.now()}`;
    const mail = await submitHtmlMail(api, env.apiKey, env.baseURL, subject);
    await app.login();
    const row = app.dataRows.filter({ hasText: subject });
    await app.cell(row, 'Subject').click();
    const drawer = page.getByRole('dialog', { name: `Mail #${mail.id}` });

    // Visible text as the spec's buttons, accessible name with the mail.
    let mark = traffic.mark();
    await drawer.getByRole('button', { name: `Dequeue mail #${mail.id}`, exact: true }).click();
    await traffic.nextList(mark);
    await expect(drawer.getByText('Dequeued', { exact: true }).first()).toBeVisible();
    await expect(app.cell(row, 'Status')).toHaveText('Dequeued');

    mark = traffic.mark();
    await drawer.getByRole('button', { name: `Requeue mail #${mail.id}`, exact: true }).click();
    await traffic.nextList(mark);
    await expect(app.cell(row, 'Status')).toHaveText('Queued');
    await expect(drawer.getByRole('row').filter({ hasText: 'requeued' })).toBeVisible();

    // Behind the console's back: the Dequeue in the drawer now fails with the spec's alert.
    expect(await api.dequeue(mail.id)).toBe(200);
    await drawer.getByRole('button', { name: `Dequeue mail #${mail.id}`, exact: true }).click();
    expect((await alerts.next()).message).toBe(`Unable to Dequeue the mail #${mail.id}`);

    mark = traffic.mark();
    await expect(drawer.getByRole('button', { name: `Delete mail #${mail.id}`, exact: true })).toHaveText('Delete');
    await drawer.getByRole('button', { name: `Delete mail #${mail.id}`, exact: true }).click();
    await traffic.next((c) => isList(c) && c.done, mark);
    await expect(drawer).toHaveCount(0);
    await expect(row).toHaveCount(0);
  });
});
