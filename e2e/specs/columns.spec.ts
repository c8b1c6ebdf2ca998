/**
 * Beyond the spec: every column but the action column sorts, from anywhere on its
 * header cell; From grows with the window like To and Subject; a To cell with more recipients than fit shows
 * "+N more"; at 1024 px the action buttons stay visible.
 */
import type { Locator } from '@playwright/test';
import { COLUMN_NAMES } from '../support/console';
import { expect, test } from '../support/fixtures';
import { isList } from '../support/traffic';

const SORT_OF: Record<(typeof COLUMN_NAMES)[number], string> = {
  From: 'from',
  To: 'to',
  Subject: 'subject',
  Status: 'status',
  ProviderSentDate: 'providerSentDate',
  ReceivedDate: 'receivedDate',
  LastUpdate: 'lastUpdate',
};

async function width(locator: Locator): Promise<number> {
  return (await locator.boundingBox())!.width;
}

test.describe('Columns: sorting and layout', () => {
  // Each test starts from app.login(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });

  test('Beyond the spec: every data column sorts from a click anywhere on its header cell; the action column does not', async ({
    app,
    page,
    traffic,
  }) => {
    await app.login();
    for (const name of COLUMN_NAMES) {
      const header = app.columnHeader(name);
      await expect(header).toHaveAttribute('aria-sort', /^(none|ascending|descending)$/);
      const box = (await header.boundingBox())!;
      const mark = traffic.mark();
      // Near the right edge, left of the resize handle: outside the header's text.
      await page.mouse.click(box.x + box.width - 12, box.y + box.height - 6);
      await expect(header).toHaveAttribute('aria-sort', /^(ascending|descending)$/);
      // A page seen in the last few seconds comes from the cache without a call; any call made is this sort.
      for (const call of traffic.find(isList, mark)) expect(call.query.get('sort'), name).toBe(SORT_OF[name]);
    }
    await expect(app.actionHeader).not.toHaveAttribute('aria-sort');
    const mark = traffic.mark();
    await app.actionHeader.click();
    await page.waitForTimeout(300); // nothing to wait for: a click that must not cause a call
    expect(app.listCalls(mark)).toBe(0);
  });

  test('Beyond the spec: To sorts by its first recipient on the server (needs sort=to on the server)', async ({ app, traffic }) => {
    await app.login();
    const mark = traffic.mark();
    await app.columnHeader('To').click();
    const call = await traffic.next((c) => isList(c) && c.done, mark);
    expect(call.status).toBe(200);
    const list = call.body as Awaited<ReturnType<typeof app.sortBy>>;
    await app.expectRows(list);
    const firsts = list.data.map((mail) => mail.to[0]?.recipientMail.toLowerCase() ?? '');
    expect(firsts).toEqual([...firsts].sort());
  });

  test('Beyond the spec: From grows with the window like To and Subject; the dates barely do', async ({ app, page }) => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await app.login();
    const names = ['From', 'To', 'Subject', 'ReceivedDate'] as const;
    const narrow = await Promise.all(names.map((name) => width(app.columnHeader(name))));
    await page.setViewportSize({ width: 1920, height: 1080 });
    await expect.poll(() => width(app.columnHeader('From'))).toBeGreaterThan(narrow[0]! + 60);
    const wide = await Promise.all(names.map((name) => width(app.columnHeader(name))));
    const growth = wide.map((value, index) => value / narrow[index]!);
    // From grows at least as much as To (it was the one column that hardly grew).
    expect(growth[0]).toBeGreaterThan(1.3);
    expect(growth[0]).toBeGreaterThanOrEqual(growth[1]! - 0.05);
    expect(growth[2]).toBeGreaterThan(1.3);
    expect(growth[3]).toBeLessThan(growth[0]!);
  });

  test('Beyond the spec: a To cell with more recipients than fit shows a visible "+N more"', async ({ app, api, env }) => {
    const to = Array.from({ length: 6 }, (_, index) => ({ recipientName: `Many ${index}`, recipientMail: `many${index}@example.com` }));
    const mail = await api.submit(env.apiKey, {
      fromName: 'Fan Out',
      fromMail: 'fanout@example.com',
      to,
      subject: 'Six recipients',
      text: 'hi',
    });
    await app.login(); // newest first: the new mail is on the first page
    const row = app.dataRows.filter({ hasText: 'Six recipients' });
    await expect(row).toHaveCount(1);
    const cell = app.cell(row, 'To');
    // Every recipient stays a line of the cell (docs/console.md §2); the cue is drawn over the third line's end.
    await expect(cell.getByText(/^Many \d \| many\d@example\.com$/)).toHaveCount(6);
    const cue = await cell.locator('.stack').evaluate((element) => {
      const style = getComputedStyle(element, '::after');
      return { content: style.content, display: style.display, visibility: style.visibility };
    });
    expect(cue.content).toBe('"+3 more"');
    expect(cue.display).not.toBe('none');
    expect(cue.visibility).toBe('visible');
    expect((await cell.getAttribute('title'))!.split('\n')).toHaveLength(6);
    // Out of the shared store again (dequeued, then deleted): later specs count the seed's mails.
    await api.purge([mail.id]);
  });

  test('Beyond the spec: at 1024 px wide the action buttons stay visible', async ({ app, page }) => {
    await page.setViewportSize({ width: 1024, height: 700 });
    await app.login();
    const viewport = page.viewportSize()!;
    const buttons = app.dataRows.getByRole('button');
    const count = await buttons.count();
    expect(count).toBeGreaterThan(5);
    for (let index = 0; index < 5; index++) {
      const button = buttons.nth(index);
      await expect(button).toBeInViewport();
      const box = (await button.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
    }
    await page.screenshot({ path: test.info().outputPath('list-1024.png') });
  });
});
