/**
 * Beyond the spec (docs/console.md §10): the audit log panel opened from the header: who did
 * what, when, to which mails, with the outcome; keyset paged, filtered by operator and action, exported as CSV
 * (fetched with the Authorization header, never a token in a URL). Logins, failed logins, logouts, actions,
 * bulk actions and API key creation are all there.
 */
import { readFile } from 'node:fs/promises';
import { axeViolations } from '../support/axe';
import { expect, test } from '../support/fixtures';
import type { ApiCall } from '../support/traffic';

const isAudit = (call: ApiCall) => call.method === 'GET' && call.path === '/api/v1/audit';

test.describe('Audit log', () => {
  test.describe.configure({ timeout: 90_000 });

  test('Beyond the spec: the panel lists logins, failed logins, logouts, mail and bulk actions and API key creation, pages and filters them', async ({
    app,
    api,
    env,
    page,
    request,
    traffic,
  }) => {
    // Something of every kind, through the real API.
    expect((await request.post('/api/v1/login', { data: { username: env.username, password: 'wrong password' } })).status()).toBe(401);
    const other = await request.post('/api/v1/login', { data: { username: env.username, password: env.password } });
    expect(await api.revoke(((await other.json()) as { data: { token: string }[] }).data[0]!.token)).toBe(200);
    const word = `audit${Date.now().toString(36)}`;
    const mails = await api.submitMany(
      env.apiKey,
      Array.from({ length: 60 }, (_, index) => ({
        fromMail: 'audit@example.com',
        to: [{ recipientMail: 'ann@example.net' }],
        subject: `${word} ${index}`,
        text: 'hi',
      })),
    );
    // 55 single dequeues: more entries than one page of the panel.
    for (const mail of mails.slice(0, 55)) expect(await api.dequeue(mail.id)).toBe(200);
    const bulk = await api.bulk({ action: 'delete', ids: mails.map((m) => m.id) });
    expect(bulk.status).toBe(200);

    await app.login();
    const open = page.getByRole('button', { name: 'Audit log' });
    await open.click();
    const panel = page.getByRole('dialog', { name: 'Audit log' });
    await expect(panel).toHaveAttribute('aria-modal', 'true');
    const rows = panel.getByRole('row').filter({ has: page.getByRole('cell') });
    const cells = async (index: number) => rows.nth(index).getByRole('cell').allTextContents();

    // Newest first: this login, then the bulk delete with its outcome, then the dequeues.
    await expect(rows).toHaveCount(50);
    expect((await cells(0)).slice(1, 3)).toEqual([env.username, 'login']);
    expect((await cells(1)).slice(1)).toEqual([
      env.username,
      'mail.bulk.delete',
      `60 mails: ${mails
        .slice(0, 5)
        .map((m) => `#${m.id}`)
        .join(', ')} …`,
      '55 done · 5 skipped (queued 5)',
    ]);
    expect((await cells(2)).slice(1)).toEqual([env.username, 'mail.dequeue', `#${mails[54]!.id}`, 'Queued → Dequeued']);
    expect(await axeViolations(page, { include: '[role="dialog"]' })).toEqual([]);
    await page.screenshot({ path: test.info().outputPath('audit-panel.png') });

    // Keyset paging: the next page continues where the first ended, without repeats.
    let mark = traffic.mark();
    await panel.getByRole('button', { name: 'Load more' }).click();
    const next = await traffic.next((c) => isAudit(c) && c.done, mark);
    expect(next.query.get('cursor')).toBeTruthy();
    await expect(rows).toHaveCount(Math.min(100, 50 + (next.body as { data: unknown[] }).data.length));
    const pageIds = (call: { body?: unknown }) => (call.body as { data: { id: number }[] }).data.map((entry) => entry.id);
    const firstPage = traffic.find((c) => isAudit(c) && c.done && c.seq <= mark).at(-1)!;
    const ids = [...pageIds(firstPage), ...pageIds(next)];
    expect(new Set(ids).size).toBe(ids.length);

    // Filters: the failed login, the logout and the API key the suite's setup created (by the command line).
    const filterBy = async (action: string, expected: string[][]) => {
      const before = traffic.mark();
      await panel.getByRole('combobox', { name: 'Action' }).selectOption(action);
      await traffic.next((c) => isAudit(c) && c.done && c.query.get('action') === action, before);
      await expect.poll(async () => (await rows.count()) > 0 && (await cells(0)).slice(1)).toEqual(expected[0]);
    };
    await filterBy('login.failed', [['client:127.0.0.1', 'login.failed', `operator:${env.username}`, 'refused']]);
    await filterBy('logout', [[env.username, 'logout', '', '']]);
    // Other specs on this server (applications.spec) may have made newer API keys: the suite's own is among them.
    const beforeKeys = traffic.mark();
    await panel.getByRole('combobox', { name: 'Action' }).selectOption('apikey');
    await traffic.next((c) => isAudit(c) && c.done && c.query.get('action') === 'apikey', beforeKeys);
    await expect
      .poll(async () => {
        const texts = await Promise.all(Array.from({ length: await rows.count() }, (_, i) => cells(i)));
        return texts.some((row) => row.slice(1).join('|') === ['cli', 'apikey.create', 'e2e', ''].join('|'));
      })
      .toBe(true);
    await filterBy('mail.bulk', [
      [env.username, 'mail.bulk.delete', expect.stringContaining('60 mails') as unknown as string, '55 done · 5 skipped (queued 5)'],
    ]);
    mark = traffic.mark();
    await panel.getByRole('searchbox', { name: 'Operator' }).fill('nobody-here');
    await traffic.next((c) => isAudit(c) && c.done && c.query.get('operator') === 'nobody-here', mark);
    await expect(panel.getByRole('cell', { name: 'No entries' })).toBeVisible();
    await panel.getByRole('searchbox', { name: 'Operator' }).fill('');

    // CSV: fetched with the header, then saved from a Blob.
    mark = traffic.mark();
    const download = page.waitForEvent('download');
    await panel.getByRole('button', { name: 'Download CSV' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe('outbox-audit.csv');
    const csv = await readFile((await file.path())!, 'utf8');
    expect(csv.split('\r\n')[0]).toMatch(/^id,at,actor,action/);
    expect(csv).toContain('mail.bulk.delete');
    const csvCall = await traffic.next((c) => isAudit(c) && c.done && c.query.get('format') === 'csv', mark);
    expect(csvCall.query.get('action')).toBe('mail.bulk');
    expect(csvCall.headers.authorization).toMatch(/^Token /);
    expect(csvCall.query.toString()).not.toContain(csvCall.headers.authorization!.slice('Token '.length));

    // Esc closes the panel; focus returns to its button.
    await page.keyboard.press('Escape');
    await expect(panel).toHaveCount(0);
    await expect(open).toBeFocused();

    // The five the bulk delete skipped (Queued, due now) go too, so later specs see no due mail.
    for (const mail of mails.slice(55)) {
      expect(await api.dequeue(mail.id)).toBe(200);
      expect(await api.remove(mail.id)).toBe(200);
    }
  });
});
