/**
 * Beyond the spec: the detail drawer, against the real server with a mail submitted through
 * the real API (so it has a stored message: headers, text and HTML bodies, raw .eml).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Api } from '../support/api';
import { expect, test } from '../support/fixtures';
import { submitOverSmtp } from '../support/smtp';
import { isList } from '../support/traffic';

async function submitHtmlMail(api: Api, apiKey: string, imageURL: string, subject: string) {
  return api.submit(apiKey, {
    fromName: 'Drawer Test',
    fromMail: 'drawer@example.com',
    to: [{ recipientName: 'Ann Reader', recipientMail: 'ann@example.com' }],
    cc: [{ recipientName: 'Carl Copy', recipientMail: 'carl@example.com' }],
    subject,
    text: 'Plain text body line',
    html:
      `<p id="para">Hello <b>HTML</b></p><img id="remote" alt="pixel" src="${imageURL}">` +
      '<script>parent.document.body.dataset.pwned = "yes"; document.body.dataset.ran = "yes";</script>',
    headers: { 'X-Campaign': 'drawer-e2e' },
  });
}

/**
 * A loopback HTTP server standing for a sender's image host (another origin than the console): it counts every
 * request for its image, so "no remote image before the click" is checked where the sender would see it.
 */
async function startImageHost(): Promise<{ url: (tag: string) => string; hits: string[]; agents: string[]; close: () => Promise<void> }> {
  // A 1×1 transparent PNG.
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');
  const hits: string[] = [];
  const agents: string[] = [];
  const server = http.createServer((request, response) => {
    hits.push(request.url ?? '');
    agents.push(request.headers['user-agent'] ?? '');
    response.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length, 'cache-control': 'no-store' });
    response.end(png);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (tag) => `http://127.0.0.1:${port}/pixel.png?m=${encodeURIComponent(tag)}`,
    hits,
    agents,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

test.describe('The detail drawer', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  let images: Awaited<ReturnType<typeof startImageHost>>;
  test.beforeAll(async () => {
    images = await startImageHost();
  });
  test.afterAll(async () => {
    await images.close();
  });

  test('Beyond the spec: a row click opens the detail (summary, recipients, event log, headers, bodies); the HTML is sandboxed; .eml downloads; Esc closes', async ({
    app,
    api,
    env,
    page,
  }) => {
    const subject = `Drawer ${Date.now()}`;
    const mail = await submitHtmlMail(api, env.apiKey, images.url(subject), subject);
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
    // Remote images are blocked until asked for: the image host sees no request (the frame's own policy and the
    // page's, which the srcdoc frame inherits, both allow data: images only).
    const frame = page.frameLocator('iframe[title="HTML body"]');
    await expect(frame.locator('#remote')).toHaveJSProperty('complete', true);
    await page.waitForTimeout(500); // nothing to wait for: a request that must not happen
    expect(images.hits).toEqual([]);
    expect(await frame.locator('#remote').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(0);
    expect(await frameElement.getAttribute('srcdoc')).toContain('img-src data:;');
    // The click loads it through the server's image proxy: the console asks the proxy with its
    // token, the server (not Chromium) fetches it from the image host, and the frame gets it as a data: URL,
    // its policy still img-src data: only.
    const proxied = page.waitForResponse((response) => new URL(response.url()).pathname === `/api/v1/mail/${mail.id}/remote-image`);
    await drawer.getByRole('button', { name: 'Load remote images' }).click();
    const answer = await proxied;
    expect(answer.status()).toBe(200);
    expect(answer.headers()['content-type']).toBe('image/png');
    expect(answer.headers()['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(new URL(answer.url()).searchParams.get('url')).toBe(images.url(subject));
    expect(await answer.request().headerValue('authorization')).toMatch(/^Token /);
    await expect(drawer.getByText('Remote images are loaded.')).toBeVisible();
    expect(images.hits).toEqual([`/pixel.png?m=${encodeURIComponent(subject)}`]);
    expect(images.agents).toEqual(['Outbox-ImageProxy/1']);
    const srcdoc = (await frameElement.getAttribute('srcdoc'))!;
    expect(srcdoc).toContain('img-src data:;');
    expect(srcdoc).not.toContain(images.url(subject).replace(/&/g, '&amp;'));
    expect(await frame.locator('#remote').getAttribute('src')).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
    await expect.poll(() => frame.locator('#remote').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1);
    // Still sandboxed after the click: its script did not run.
    expect(await frame.locator('body').getAttribute('data-ran')).toBeNull();

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
    await api.purge([mail.id]);
  });

  test('Beyond the spec: a mail with attachments, sent over SMTP, lists them by name, type and size; each recipient (also an envelope-only Bcc) shows its own outcome', async ({
    app,
    api,
    env,
    page,
  }) => {
    const subject = `Drawer attachments ${Date.now()}`;
    const pdf = Buffer.alloc(3000, 0x25).toString('base64');
    const id = await submitOverSmtp(
      env.smtpPort,
      env.apiKey,
      { from: 'shop@example.com', to: ['ann@example.com', 'hidden@example.com'] },
      [
        'From: Shop <shop@example.com>',
        'To: Ann Reader <ann@example.com>',
        `Subject: ${subject}`,
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'See the invoice.',
        '--b1',
        'Content-Type: application/pdf; name="invoice-42.pdf"',
        'Content-Disposition: attachment; filename="invoice-42.pdf"',
        'Content-Transfer-Encoding: base64',
        '',
        ...(pdf.match(/.{1,76}/g) ?? []),
        '--b1--',
        '',
      ].join('\r\n'),
    );
    await app.login();
    await app.cell(app.dataRows.filter({ hasText: subject }), 'Subject').click();
    const drawer = page.getByRole('dialog', { name: `Mail #${id}` });
    const attachments = drawer.getByRole('region', { name: `Detail of mail #${id}` }).locator('section', {
      has: page.getByRole('heading', { name: 'Attachments' }),
    });
    await expect(attachments.getByRole('row').filter({ hasText: 'invoice-42.pdf' })).toContainText('application/pdf');
    await expect(attachments.getByRole('row').filter({ hasText: 'invoice-42.pdf' })).toContainText('2.9 KiB');
    await expect(attachments.getByRole('row').filter({ hasText: 'invoice-42.pdf' }).getByTitle('3,000 bytes')).toBeVisible();

    const recipients = drawer.locator('section', { has: page.getByRole('heading', { name: 'Recipients' }) });
    await expect(recipients.getByRole('row').filter({ hasText: 'ann@example.com' })).toHaveText('ToAnn Reader | ann@example.compending');
    // Only in the envelope (an SMTP Bcc): still listed, with its own outcome.
    await expect(recipients.getByRole('row').filter({ hasText: 'hidden@example.com' })).toHaveText('Envelopehidden@example.compending');
    await expect(recipients.getByRole('row')).toHaveCount(3); // the header row, ann once, hidden
    // Later specs count rows against the seed: the mail goes again.
    await api.purge([id]);
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
    const mail = await submitHtmlMail(api, env.apiKey, 'http://127.0.0.1:9/never.png', subject);
    // Without live updates (a server answering 404 to the stream), so the drawer keeps the stale Dequeue below.
    await page.route('**/api/v1/events', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{}' }));
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
