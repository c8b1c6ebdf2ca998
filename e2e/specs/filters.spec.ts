/**
 * Beyond the spec (docs/console.md §10.8): status chips with exact counts, search, received-date
 * range, the range in the footer and First/Previous/Next/Last, against the real server and store.
 */
import { Status, STATUS_NAMES } from '../support/api';
import { PAGE_SIZE } from '../support/console';
import { expect, test } from '../support/fixtures';
import { isList } from '../support/traffic';

const thousands = (value: number) => new Intl.NumberFormat('en-US').format(value);

test.describe('Filters, search and the pager', () => {
  // Each test starts from app.login(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });

  test('Beyond the spec: one chip per status with its exact count from meta.counts, plus All', async ({ app, page, api }) => {
    const { list } = await app.login();
    const counts = (await api.list({ limit: 1 })).meta.counts;
    expect(list.meta.counts).toEqual(counts);
    const chips = page.getByRole('group', { name: 'Status' }).getByRole('button');
    await expect(chips).toHaveCount(STATUS_NAMES.length + 1);
    const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
    await expect(chips.nth(0)).toHaveText(`All${thousands(total)}`);
    await expect(chips.nth(0)).toHaveAttribute('aria-pressed', 'true');
    for (const [code, name] of STATUS_NAMES.entries()) {
      await expect(chips.nth(code + 1)).toHaveText(`${name}${thousands(counts[String(code)] ?? 0)}`);
      await expect(chips.nth(code + 1)).toHaveAttribute('aria-pressed', 'false');
    }
  });

  test('Beyond the spec: several status chips at once filter on the server and return to page 1', async ({ app, page, traffic, api }) => {
    await app.login();
    let mark = traffic.mark();
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    await app.expectRows(await traffic.nextList(mark));

    mark = traffic.mark();
    await app.statusChip('ProviderError').click();
    const one = await traffic.next((call) => isList(call) && call.done, mark);
    expect(one.query.get('status')).toBe('4');
    expect(one.query.has('cursor')).toBe(false);

    mark = traffic.mark();
    await app.statusChip('Error').click();
    const call = await traffic.next((c) => isList(c) && c.done && c.query.get('status') === '4,5', mark);
    expect(call.query.has('cursor')).toBe(false);
    const filtered = await traffic.nextList(call.seq - 1);
    await app.expectRows(filtered);
    expect(filtered.data.length).toBeGreaterThan(0);
    for (const mail of filtered.data) expect([Status.ProviderError, Status.Error]).toContain(mail.status);
    const expectedTotal = (await api.list({ status: [4, 5], limit: 1 })).meta.total;
    expect(filtered.meta.total).toBe(expectedTotal);
    await expect(app.footerTotal).toHaveText(`total: ${expectedTotal}`);
    await expect(app.statusChip('ProviderError')).toHaveAttribute('aria-pressed', 'true');
    await expect(app.statusChip('All')).toHaveAttribute('aria-pressed', 'false');

    mark = traffic.mark();
    await app.statusChip('All').click();
    await expect(app.statusChip('All')).toHaveAttribute('aria-pressed', 'true');
    await expect(app.footerTotal).toHaveText(`total: ${await api.total()}`);
    // The unfiltered page may come from the cache (seen seconds ago); any call made has no status filter.
    for (const call of traffic.find(isList, mark)) expect(call.query.has('status')).toBe(false);
  });

  test('Beyond the spec: the search box is debounced (one call for a word), Esc clears it', async ({ app, page, traffic, api }) => {
    const { list } = await app.login();
    const word = list.data[0]!.to[0]!.recipientMail.split('@')[0]!;
    const mark = traffic.mark();
    const search = app.search;
    // When each key reached the box: on a loaded machine Playwright's keys can come further apart than the
    // debounce, and then the console rightly sends more than once.
    await search.evaluate((box) => {
      const times: number[] = [];
      (window as unknown as { keyTimes: number[] }).keyTimes = times;
      box.addEventListener('input', () => times.push(performance.now()));
    });
    await search.pressSequentially(word);
    const searched = await traffic.next((c) => isList(c) && c.done && c.query.get('q') === word, mark);
    const keyTimes = await page.evaluate(() => (window as unknown as { keyTimes: number[] }).keyTimes);
    const gaps = keyTimes.slice(1).map((at, i) => at - keyTimes[i]!);
    // What the console may send (mails-filters.tsx): one call when the burst ends, one more for each pause
    // that could outlast the 150 ms debounce (half of it counted, for a timer that fires before the next key's
    // render clears it), and one at once for a key after a 500 ms pause. Quiet, the keys come milliseconds
    // apart: exactly one call, not one per key.
    const allowed = 1 + gaps.filter((gap) => gap >= 75).length + gaps.filter((gap) => gap >= 400).length;
    const searches = traffic.find(isList).filter((c) => c.seq > mark && c.query.has('q'));
    expect(searches.length).toBeGreaterThanOrEqual(1);
    expect(searches.length, `keys ${gaps.map(Math.round).join(', ')} ms apart`).toBeLessThanOrEqual(allowed);
    const answer = searched.body as Awaited<ReturnType<typeof api.list>>;
    await app.expectRows(answer);
    expect(answer.meta.total).toBe((await api.list({ q: word, limit: 1 })).meta.total);
    const ids = answer.data.map((mail) => mail.id);
    expect(ids).toContain(list.data[0]!.id);

    const cleared = traffic.mark();
    await search.press('Escape');
    await expect(search).toHaveValue('');
    // The unfiltered page may come from the cache (seen seconds ago); any call made has no search.
    await expect(app.footerTotal).toHaveText(`total: ${await api.total()}`);
    for (const call of traffic.find(isList, cleared)) expect(call.query.has('q')).toBe(false);
  });

  test('Beyond the spec: the received-date range is sent as whole local days and returns to page 1', async ({ app, page, traffic }) => {
    await app.login();
    let mark = traffic.mark();
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    await traffic.nextList(mark);

    mark = traffic.mark();
    await page.getByLabel('Received from').fill('2026-01-01');
    const from = await traffic.next((c) => isList(c) && c.query.has('receivedFrom'), mark);
    expect(from.query.get('receivedFrom')).toBe(new Date(2026, 0, 1).toISOString());
    expect(from.query.has('cursor')).toBe(false);

    mark = traffic.mark();
    await page.getByLabel('Received to').fill('2026-01-31');
    const to = await traffic.next((c) => isList(c) && c.query.has('receivedTo'), mark);
    // receivedTo is exclusive on the server: the start of the day after the to-day includes the whole to-day.
    expect(to.query.get('receivedTo')).toBe(new Date(2026, 1, 1).toISOString());
    expect(to.query.get('receivedFrom')).toBe(new Date(2026, 0, 1).toISOString());
  });

  test('Beyond the spec: the server honours the received-date range (needs receivedFrom/receivedTo on the server)', async ({
    app,
    page,
    traffic,
  }) => {
    const { list } = await app.login();
    // The day of the newest mail: every row shown must have been received that local day.
    const newest = new Date(list.data[0]!.receivedDate!);
    const day = `${newest.getFullYear()}-${String(newest.getMonth() + 1).padStart(2, '0')}-${String(newest.getDate()).padStart(2, '0')}`;
    const mark = traffic.mark();
    await page.getByLabel('Received from').fill(day);
    await page.getByLabel('Received to').fill(day);
    const call = await traffic.next((c) => isList(c) && c.done && c.query.has('receivedTo'), mark);
    expect(call.status).toBe(200);
    const answer = call.body as typeof list;
    await app.expectRows(answer);
    const start = new Date(newest.getFullYear(), newest.getMonth(), newest.getDate()).getTime();
    for (const mail of answer.data) {
      const at = new Date(mail.receivedDate!).getTime();
      expect(at).toBeGreaterThanOrEqual(start);
      expect(at).toBeLessThan(start + 86_400_000 + 3_600_000);
    }
    expect(answer.meta.total).toBeLessThanOrEqual(list.meta.total);
  });

  test('Beyond the spec: the footer shows the range with thousands separators; Last is a keyset page from the other end', async ({
    app,
    page,
    traffic,
    api,
  }) => {
    const { list } = await app.login();
    const total = list.meta.total;
    const range = page.getByTestId('footer-range');
    await expect(range).toHaveText(`1–${PAGE_SIZE} of ${thousands(total)}`);
    await expect(app.footerTotal).toHaveText(`total: ${total}`);

    const everything = await api.list({ limit: 500 }); // receivedDate desc, as the console's default
    const lastSize = total % PAGE_SIZE || PAGE_SIZE;
    let mark = traffic.mark();
    await page.getByRole('button', { name: 'Last', exact: true }).click();
    const lastCall = await traffic.next((c) => isList(c) && c.done, mark);
    // No OFFSET: the server's lastCursor (the far end), exactly as many rows as the last page holds.
    expect(lastCall.query.get('order')).toBe('desc');
    expect(lastCall.query.get('limit')).toBe(String(lastSize));
    expect(lastCall.query.get('cursor')).toBe(list.meta.lastCursor);
    expect(lastCall.query.has('offset')).toBe(false);
    const lastRows = everything.data.slice(total - lastSize);
    await app.expectRows({ ...everything, data: lastRows });
    await expect(range).toHaveText(`${thousands(total - lastSize + 1)}–${thousands(total)} of ${thousands(total)}`);
    await expect(page.getByRole('button', { name: 'Next', exact: true })).toBeDisabled();
    await expect(page.getByRole('button', { name: 'Last', exact: true })).toBeDisabled();

    mark = traffic.mark();
    await page.getByRole('button', { name: 'Previous', exact: true }).click();
    await traffic.next((c) => isList(c) && c.done, mark);
    const before = everything.data.slice(total - lastSize - PAGE_SIZE, total - lastSize);
    await app.expectRows({ ...everything, data: before });
    await expect(range).toHaveText(`${thousands(total - lastSize - PAGE_SIZE + 1)}–${thousands(total - lastSize)} of ${thousands(total)}`);

    // Back to the last page (it may come from the cache: no call to wait for).
    await page.getByRole('button', { name: 'Next', exact: true }).click();
    await app.expectRows({ ...everything, data: lastRows });

    // And to page 1, which may come from the cache as well.
    await page.getByRole('button', { name: 'First', exact: true }).click();
    await app.expectRows({ ...everything, data: everything.data.slice(0, PAGE_SIZE) });
    await expect(range).toHaveText(`1–${PAGE_SIZE} of ${thousands(total)}`);
  });
});
