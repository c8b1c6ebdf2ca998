/**
 * Beyond the spec (docs/console.md §10): the selection column, the bulk bar, its confirmation (a
 * dry run naming what will move and what will be skipped), the outcome line, "select all N matching" (the filter
 * form with expectedCount) and its 409. Each test acts only on mails it submits itself, found by a search word.
 */
import { Status } from '../support/api';
import type { ConsolePage } from '../support/console';
import { axeViolations } from '../support/axe';
import { expect, test } from '../support/fixtures';
import { isList, type ApiCall } from '../support/traffic';

const isBulk = (call: ApiCall) => call.method === 'POST' && call.path === '/api/v1/mail/bulk';

function mailsWith(word: string, count: number) {
  return Array.from({ length: count }, (_, index) => ({
    fromName: 'Bulk Test',
    fromMail: 'bulk@example.com',
    to: [{ recipientName: 'Ann', recipientMail: `ann${index}@example.net` }],
    subject: `${word} ${index}`,
    text: 'hello',
  }));
}

/** Types the word into the search box and waits until the table shows its `rows` mails. */
async function search(app: ConsolePage, word: string, rows: number) {
  const mark = app.traffic.mark();
  await app.search.fill(word);
  const list = await app.traffic.next((c) => isList(c) && c.done && c.status === 200 && c.query.get('q') === word, mark);
  // The grid counts the header and every row of the page (its body mounts only the rows in view).
  await expect(app.table).toHaveAttribute('aria-rowcount', String(rows + 1));
  return list;
}

test.describe('Bulk actions', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  // What each test submitted goes again afterwards (Api.purge): later specs count against the seed.
  const added: number[] = [];
  test.afterEach(async ({ api }) => api.purge(added.splice(0)));
  test.describe.configure({ timeout: 90_000 });

  test('Beyond the spec: rows selected by checkbox and Space, a confirmation that names what moves and what is skipped, then the outcome', async ({
    app,
    api,
    env,
    page,
    traffic,
  }) => {
    const word = `bulkrows${Date.now().toString(36)}`;
    const mails = await api.submitMany(env.apiKey, mailsWith(word, 3));
    added.push(...mails.map((m) => m.id));
    await app.login();
    await search(app, word, 3);

    // The selection column: a checkbox per row, named for its mail; Space on a focused row toggles it too.
    const first = app.row(0);
    await first.getByRole('checkbox', { name: /^Select mail #\d+$/ }).click();
    await expect(app.footerSelected).toHaveText('selected: 1');
    await app.row(1).focus();
    await page.keyboard.press('Space');
    await expect(app.footerSelected).toHaveText('selected: 2');
    await expect(app.row(1)).toHaveAttribute('aria-selected', 'true');
    await page.keyboard.press('Space');
    await expect(app.footerSelected).toHaveText('selected: 1');
    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    await expect(app.footerSelected).toHaveText('selected: 3');

    // The bar offers what Queued mails allow: Dequeue only.
    const bar = page.getByRole('toolbar', { name: 'Selected mails' });
    await expect(bar).toContainText('3 mails selected');
    await expect(bar.getByRole('button', { name: 'Dequeue…' })).toBeVisible();
    await expect(bar.getByRole('button', { name: 'Delete…' })).toHaveCount(0);
    await expect(bar.getByRole('button', { name: 'Requeue…' })).toHaveCount(0);

    // Behind the console's back one of them is dequeued: the confirmation says it will be skipped.
    expect(await api.dequeue(mails[0]!.id)).toBe(200);
    const mark = traffic.mark();
    await bar.getByRole('button', { name: 'Dequeue…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Dequeue 3 mails?' });
    await expect(dialog).toHaveAttribute('aria-modal', 'true');
    await expect(dialog.getByTestId('bulk-will-move')).toHaveText('Will dequeue: 2 mails (2 Queued)');
    await expect(dialog.getByTestId('bulk-will-skip')).toHaveText('Will skip: 1 mail (already Dequeued)');
    const dry = await traffic.next((c) => isBulk(c) && c.done, mark);
    expect(JSON.parse(dry.payload!)).toEqual({ action: 'dequeue', ids: expect.arrayContaining(mails.map((m) => m.id)), dryRun: true });
    expect(dry.headers.authorization).toMatch(/^Token /);
    expect(await api.list({ q: word, status: Status.Queued })).toMatchObject({ meta: { total: 2 } });
    expect(await axeViolations(page), 'the open confirmation').toEqual([]);

    // Focus is trapped: Tab from the last button comes back to the first.
    await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
    await page.keyboard.press('Tab');
    await expect(dialog.getByRole('button', { name: 'Dequeue 2 mails' })).toBeFocused();
    await page.keyboard.press('Tab');
    await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();

    const acted = traffic.mark();
    await dialog.getByRole('button', { name: 'Dequeue 2 mails' }).click();
    await expect(dialog).toHaveCount(0);
    await expect(page.getByRole('status').filter({ hasText: 'dequeued' })).toHaveText('2 dequeued · 1 skipped: already Dequeued');
    const real = await traffic.next((c) => isBulk(c) && c.done, acted);
    expect(JSON.parse(real.payload!).dryRun).toBeUndefined();
    // The list and its counts reload; the selection is cleared.
    await traffic.next((c) => isList(c) && c.done, acted);
    await expect(app.footerSelected).toHaveText('selected: 0');
    await expect(app.dataRows.filter({ hasText: /\bQueued\b/ })).toHaveCount(0);
    expect((await api.list({ q: word, status: Status.Dequeued })).meta.total).toBe(3);

    // Clean up through the console: all three are Dequeued now, so Delete is offered.
    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    await bar.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete 3 mails' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'deleted' })).toHaveText('3 deleted');
    expect((await api.list({ q: word })).meta.total).toBe(0);
  });

  test('Beyond the spec: "Select all N matching" acts on the whole filter with expectedCount; a filter grown far beyond it is refused (409)', async ({
    app,
    api,
    env,
    page,
    traffic,
  }) => {
    const word = `bulkall${Date.now().toString(36)}`;
    added.push(...(await api.submitMany(env.apiKey, mailsWith(word, 55))).map((m) => m.id));
    await app.login();
    await search(app, word, 50);
    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    await expect(app.footerSelected).toHaveText('selected: 50');
    await page.getByRole('button', { name: 'Select all 55 matching' }).click();
    await expect(app.footerSelected).toHaveText('selected: 55');
    const bar = page.getByRole('toolbar', { name: 'Selected mails' });
    await expect(bar).toContainText('All 55 mails matching selected');

    // 20 more arrive behind the operator's back: 75 > 55 × 1.1 + 10, so the action is refused and nothing moves.
    let mark = traffic.mark();
    await bar.getByRole('button', { name: 'Dequeue…' }).click();
    let dialog = page.getByRole('dialog', { name: 'Dequeue 55 mails?' });
    await expect(dialog.getByTestId('bulk-will-move')).toHaveText('Will dequeue: 55 mails (55 Queued)');
    const dry = await traffic.next((c) => isBulk(c) && c.done, mark);
    expect(JSON.parse(dry.payload!)).toEqual({ action: 'dequeue', filter: { q: word }, expectedCount: 55, dryRun: true });
    added.push(...(await api.submitMany(env.apiKey, mailsWith(word, 20))).map((m) => m.id));
    await dialog.getByRole('button', { name: 'Dequeue 55 mails' }).click();
    await expect(dialog.getByRole('alert')).toHaveText(
      'The filter now matches far more mails than the 55 you selected. Nothing was changed: look at the list again and select anew.',
    );
    const refused = await traffic.next((c) => isBulk(c) && c.done && !JSON.parse(c.payload!).dryRun, mark);
    expect(refused.status).toBe(409);
    expect((await api.list({ q: word, status: Status.Queued })).meta.total).toBe(75);
    // The list reloads behind the dialog (the count it showed is out of date) and the selection clears.
    const reloaded = await traffic.next((c) => isList(c) && c.done && c.query.get('q') === word, refused.seq);
    expect((reloaded.body as { meta: { total: number } }).meta.total).toBe(75);
    await expect(app.footerSelected).toHaveText('selected: 0');
    await page.keyboard.press('Escape');
    await expect(dialog).toHaveCount(0);

    // Looked at again: 75 match; all of them are dequeued, then deleted.
    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    await page.getByRole('button', { name: 'Select all 75 matching' }).click();
    mark = traffic.mark();
    await bar.getByRole('button', { name: 'Dequeue…' }).click();
    dialog = page.getByRole('dialog', { name: 'Dequeue 75 mails?' });
    await dialog.getByRole('button', { name: 'Dequeue 75 mails' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'dequeued' })).toHaveText('75 dequeued');
    const done = await traffic.next((c) => isBulk(c) && c.done && !JSON.parse(c.payload!).dryRun, mark);
    expect(JSON.parse(done.payload!)).toEqual({ action: 'dequeue', filter: { q: word }, expectedCount: 75 });
    expect((await api.list({ q: word, status: Status.Dequeued })).meta.total).toBe(75);

    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    await page.getByRole('button', { name: 'Select all 75 matching' }).click();
    await bar.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete 75 mails' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'deleted' })).toHaveText('75 deleted');
    expect((await api.list({ q: word })).meta.total).toBe(0);
  });
});
