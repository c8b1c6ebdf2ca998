/**
 * Beyond the spec (docs/console.md §10.10): what a bounce looks like in the console, end to end on
 * a server of its own with a worker, BOUNCE_DOMAIN and the bounce listener. Two mails are delivered to the
 * embedded capture relay with their return paths; a delivery status report (RFC 3464) for one recipient of each
 * is handed to the bounce listener over SMTP. The whole bounce is found under the ProviderError chip and by the
 * search; the partial one keeps ProviderSent with "1 of 2 rejected"; the drawer shows the report under the
 * bounced recipient (status code, action, diagnostic, when); the address is on the suppression list. axe clean
 * and screenshots of the drawer in light and dark.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from '@playwright/test';
import type { Mail, MailDetail } from '@outbox/contract';
import { axeViolations } from '../support/axe';
import { expect as baseExpect, test } from '../support/fixtures';
import { forEachScheme } from '../support/looks';
import { freePort, startServer, type RunningServer } from '../support/server';
import { sendOverSmtp } from '../support/smtp';

// A loaded, shared machine: generous waits, each for an event.
const expect = baseExpect.configure({ timeout: 15_000 });
const ProviderSent = 3;

/** A DSN as a remote MTA writes it: one failed recipient, its status and its reply (RFC 3464). */
function deliveryReport(returnPath: string, recipient: string, diagnostic: string): string {
  return [
    'From: MAILER-DAEMON@mx.remote.test (Mail Delivery System)',
    `To: ${returnPath}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="REPORT"',
    '',
    '--REPORT',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'Your message could not be delivered.',
    '',
    '--REPORT',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.remote.test',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: failed',
    'Status: 5.1.1',
    `Diagnostic-Code: smtp; ${diagnostic}`,
    '',
    '--REPORT--',
    '',
  ].join('\r\n');
}

test.describe('Bounces in the console (a server of its own: worker, BOUNCE_DOMAIN, bounce listener)', () => {
  test.describe.configure({ timeout: 180_000 });
  test.use({ actionTimeout: 15_000 });
  let server: RunningServer;
  let bouncePort: number;

  test.beforeAll(async () => {
    // A server start waits up to 120 s for /healthz on a loaded machine (support/server.ts); a hook's own
    // timeout is the config's 30 s unless set here.
    test.setTimeout(180_000);
    bouncePort = await freePort();
    server = await startServer({
      demoCount: 0,
      env: { WORKER: 'on', BOUNCE_DOMAIN: 'bounce.test', BOUNCE_SMTP_PORT: String(bouncePort) },
    });
  });
  test.afterAll(async () => {
    await server?.stop();
  });

  async function submit(to: string[], subject: string): Promise<number> {
    const response = await fetch(`${server.baseURL}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${server.apiKey}` },
      body: JSON.stringify({ fromMail: 'shop@example.com', to: to.map((recipientMail) => ({ recipientMail })), subject, text: 'x' }),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { data: Mail[] }).data[0]!.id;
  }

  /** The application reads its own mail (docs/api.md) until the worker has delivered it. */
  async function delivered(id: number): Promise<void> {
    await expect
      .poll(
        async () => {
          const response = await fetch(`${server.baseURL}/api/v1/mail/${id}`, { headers: { authorization: `Token ${server.apiKey}` } });
          return ((await response.json()) as { data: MailDetail[] }).data[0]?.status;
        },
        { timeout: 60_000 },
      )
      .toBe(ProviderSent);
  }

  /**
   * The envelope sender the capture relay saw for one recipient of this mail: its return path,
   * b-<id>-<recipient>-<hmac>@bounce.test (one envelope per recipient, docs/bounces.md).
   */
  async function returnPathOf(id: number, recipient: string): Promise<string> {
    const dir = path.join(server.dataDir, 'captured');
    for (const name of (await readdir(dir)).filter((n) => n.endsWith('.json'))) {
      const envelope = JSON.parse(await readFile(path.join(dir, name), 'utf8')) as { mailFrom: string; rcptTo: string[] };
      if (envelope.mailFrom.startsWith(`b-${id}-`) && envelope.rcptTo.includes(recipient)) return envelope.mailFrom;
    }
    throw new Error(`no captured mail with the return path of mail ${id} for ${recipient}`);
  }

  async function bounce(id: number, recipient: string, diagnostic: string): Promise<void> {
    const returnPath = await returnPathOf(id, recipient);
    expect(returnPath).toMatch(new RegExp(`^b-${id}-\\d+-[a-z2-7]+@bounce\\.test$`));
    const answer = await sendOverSmtp(bouncePort, null, { from: '', to: [returnPath] }, deliveryReport(returnPath, recipient, diagnostic));
    expect(answer).toMatch(/^250 /);
  }

  async function login(page: Page): Promise<void> {
    await page.goto(server.baseURL);
    await page.getByLabel('Username', { exact: true }).fill(server.username);
    await page.getByLabel('Password', { exact: true }).fill(server.password);
    await page.getByRole('button', { name: 'Login', exact: true }).click();
    await expect(page.getByRole('heading', { name: 'MAILS LIST' })).toBeVisible();
  }

  const rowOf = (page: Page, id: number) => page.locator(`#mails-grid tr[data-mail-id="${id}"]`);

  test('Beyond the spec: a bounced recipient shows its report in the drawer; the chips, the search and the marker find bounced mails; the address is suppressed', async ({
    page,
  }) => {
    const stamp = `b${Date.now().toString(36)}`;
    const whole = await submit([`${stamp}-gone@example.net`], `${stamp} whole`);
    const partial = await submit([`${stamp}-kept@example.net`, `${stamp}-lost@example.net`], `${stamp} partial`);
    await delivered(whole);
    await delivered(partial);
    const diagnostic = `550 5.1.1 <${stamp}-lost@example.net>: Recipient address rejected: User unknown`;
    await bounce(whole, `${stamp}-gone@example.net`, `550 5.1.1 <${stamp}-gone@example.net>: User unknown`);
    await bounce(partial, `${stamp}-lost@example.net`, diagnostic);

    await login(page);
    // The search finds both by a bounced address's text; the partial one keeps ProviderSent with its marker.
    await page.getByRole('searchbox', { name: /Search/ }).fill(stamp);
    await expect(rowOf(page, whole)).toContainText('ProviderError');
    await expect(rowOf(page, partial)).toContainText('ProviderSent');
    await expect(rowOf(page, partial)).toContainText('1 of 2 rejected');
    // The ProviderError chip keeps the whole bounce and drops the partial one.
    await page
      .getByRole('group', { name: 'Status' })
      .getByRole('button', { name: /^ProviderError/ })
      .click();
    await expect(rowOf(page, partial)).toHaveCount(0);
    await expect(rowOf(page, whole)).toBeVisible();
    await page.getByRole('group', { name: 'Status' }).getByRole('button', { name: /^All/ }).click();

    // The drawer: the report under the bounced recipient, nothing under the accepted one.
    await rowOf(page, partial).getByText(`${stamp} partial`).click();
    const drawer = page.getByRole('dialog', { name: `Mail #${partial}` });
    const recipients = drawer.getByRole('region', { name: 'Recipients' });
    await expect(recipients.getByRole('note')).toHaveText('1 of 2 recipients rejected');
    const report = recipients.getByLabel(`Bounce report for ${stamp}-lost@example.net`);
    await expect(recipients.getByLabel(/^Bounce report for /)).toHaveCount(1);
    await expect(report).toContainText('Status5.1.1');
    await expect(report).toContainText('Actionfailed');
    // The Diagnostic-Code as the report gave it, its type (smtp;) included.
    await expect(report).toContainText(`Diagnosticsmtp; ${diagnostic}`);
    await expect(report.getByRole('time')).toHaveAttribute('title', /^\d{4}-\d\d-\d\dT/);
    await expect(recipients.getByText('bounced (after the relay accepted it)')).toBeVisible();

    await forEachScheme(page, async (scheme) => {
      expect(await axeViolations(page, { include: '[role="dialog"]' }), scheme).toEqual([]);
      await recipients.scrollIntoViewIfNeeded();
      await page.screenshot({ path: test.info().outputPath(`drawer-bounce-${scheme}.png`) });
    });
    await page.keyboard.press('Escape');

    // The address is on the suppression list, with the report's diagnostic and the mail.
    await page.getByRole('button', { name: 'Suppressions' }).click();
    const panel = page.getByRole('dialog', { name: 'Suppressions' });
    await panel.getByRole('searchbox', { name: 'Search addresses' }).fill(`${stamp}-lost`);
    const row = panel
      .getByRole('region', { name: 'Suppressed addresses' })
      .getByRole('row')
      .filter({ hasText: `${stamp}-lost@example.net` });
    await expect(row).toContainText('Hard bounce');
    await expect(row).toContainText(`#${partial}`);
    await expect(row).toContainText(diagnostic);
  });
});
