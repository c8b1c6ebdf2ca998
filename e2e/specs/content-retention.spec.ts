/**
 * Beyond the spec (docs/console.md §10.10, docs/operations.md#content-retention): a mail whose
 * content retention removed its message, end to end on a server of its own with a worker and
 * CONTENT_RETENTION_DAYS=0. A mail refused by the capture relay (reject.test: ProviderError, which an operator could
 * requeue) is delivered; the server restarts, and its content purge at start removes the message. The drawer says
 * "Content removed on …" where the bodies were, with no Requeue and no Download .eml; the raw message answers 410.
 */
import type { Mail, MailDetail } from '@outbox/contract';
import { axeViolations } from '../support/axe';
import { expect as baseExpect, test } from '../support/fixtures';
import { startServer, type RunningServer } from '../support/server';

// A loaded, shared machine: generous waits, each for an event.
const expect = baseExpect.configure({ timeout: 15_000 });
const ProviderError = 4;

test.describe('Content retention in the console (a server of its own: worker, CONTENT_RETENTION_DAYS=0)', () => {
  test.describe.configure({ timeout: 240_000 });
  test.use({ actionTimeout: 15_000 });
  let server: RunningServer;

  test.beforeAll(async () => {
    test.setTimeout(180_000);
    server = await startServer({ demoCount: 0, env: { WORKER: 'on', CONTENT_RETENTION_DAYS: '0' } });
  });
  test.afterAll(async () => {
    await server?.stop();
  });

  /** The application's own read of its mail (docs/api.md). */
  async function detailOf(id: number): Promise<MailDetail | undefined> {
    const response = await fetch(`${server.baseURL}/api/v1/mail/${id}`, { headers: { authorization: `Token ${server.apiKey}` } });
    return ((await response.json()) as { data: MailDetail[] }).data[0];
  }

  test('Beyond the spec: the drawer says when the content was removed, where the bodies were, and offers neither Requeue nor the .eml', async ({
    page,
  }) => {
    const subject = `c${Date.now().toString(36)} refused`;
    const submitted = await fetch(`${server.baseURL}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${server.apiKey}` },
      body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@reject.test' }], subject, text: 'The secret body' }),
    });
    expect(submitted.status).toBe(202);
    const id = ((await submitted.json()) as { data: Mail[] }).data[0]!.id;
    await expect.poll(async () => (await detailOf(id))?.status, { timeout: 60_000 }).toBe(ProviderError);

    // The purge runs at start and then every minute: a restart makes it run now.
    await server.restart();
    await expect.poll(async () => (await detailOf(id))?.contentRemovedAt ?? null, { timeout: 60_000 }).not.toBeNull();
    const raw = await fetch(`${server.baseURL}/api/v1/mail/${id}/raw`, { headers: { authorization: `Token ${server.apiKey}` } });
    expect(raw.status).toBe(410);
    expect(((await raw.json()) as { error: { code: string } }).error.code).toBe('content_removed');

    await page.goto(server.baseURL);
    await page.getByLabel('Username', { exact: true }).fill(server.username);
    await page.getByLabel('Password', { exact: true }).fill(server.password);
    await page.getByRole('button', { name: 'Login', exact: true }).click();
    await expect(page.getByRole('heading', { name: 'MAILS LIST' })).toBeVisible();

    await page.locator(`#mails-grid tr[data-mail-id="${id}"]`).getByText(subject).click();
    const drawer = page.getByRole('dialog', { name: `Mail #${id}` });
    const content = drawer.getByRole('region', { name: 'Content', exact: true });
    await expect(content).toContainText(/Content removed on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\./);
    await expect(content.getByRole('time')).toHaveAttribute('title', /^\d{4}-\d\d-\d\dT/);
    await expect(content).toContainText('It cannot be requeued or downloaded.');
    await expect(drawer.getByRole('heading', { name: 'Text body' })).toHaveCount(0);
    await expect(drawer.getByRole('button', { name: 'Download .eml' })).toHaveCount(0);
    await expect(drawer.getByRole('button', { name: `Requeue mail #${id}` })).toHaveCount(0);
    await expect(drawer.getByRole('button', { name: `Delete mail #${id}` })).toBeVisible();
    // The record stays: the event log still tells the story.
    await expect(drawer.getByRole('region', { name: 'Event log' })).toContainText('accepted');

    expect(await axeViolations(page, { include: '[role="dialog"]' })).toEqual([]);
  });
});
