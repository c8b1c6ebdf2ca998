import { Status } from '../support/api';
import { expect, test } from '../support/fixtures';
import { isDeleteOf, isDequeueOf } from '../support/traffic';

test.describe('The product (§1, §2)', () => {
  test('§1 An operator logs in, sees the mails, dequeues a queued mail, deletes a finished one and logs out', async ({
    app,
    api,
    traffic,
  }) => {
    const { list } = await app.login();
    expect(list.meta.total).toBe(await api.total());
    await expect(app.footerTotal).toHaveText(`total: ${list.meta.total}`);

    const queued = await app.showStatus(list, Status.Queued);
    let mark = traffic.mark();
    await app
      .rowOf(queued.mail)
      .getByRole('button', { name: /^Dequeue mail #\d+$/ })
      .click();
    const dequeue = await traffic.next(isDequeueOf(queued.mail.id), mark);
    await app.expectRows(await traffic.nextList(dequeue.seq));
    await expect(app.cell(app.rowOf(queued.mail), 'Status')).toHaveText('Dequeued');

    // Deleted from the Dequeued status it now has (a finished one: ProviderSent is covered in §4).
    mark = traffic.mark();
    await app
      .rowOf(queued.mail)
      .getByRole('button', { name: /^Delete mail #\d+$/ })
      .click();
    const remove = await traffic.next(isDeleteOf(queued.mail.id), mark);
    expect(remove.status).toBe(200);
    await app.expectRows(await traffic.nextList(remove.seq));
    await expect(app.rowOf(queued.mail)).toHaveCount(0);
    await expect(app.footerTotal).toHaveText(`total: ${list.meta.total - 1}`);

    await app.logoutButton.click();
    await expect(app.loginHeading).toBeVisible();
  });

  test('§2 One screen and no routes of its own: the path stays /, no history entries, logout leaves the bare address', async ({
    app,
    page,
    env,
  }) => {
    await app.open();
    const start = page.url();
    expect(new URL(start).pathname).toBe('/');
    const historyLength = await page.evaluate(() => window.history.length);
    await app.login();
    expect(page.url()).toBe(start);
    await app.sortBy('Subject');
    // The view lives in the query string (docs/console.md §10.11), never in a route of its own or a new history entry.
    // Written just after the frame that shows the change (replaceState is slow: not in that frame).
    await expect.poll(() => new URL(page.url()).searchParams.get('sort')).toBe('subject');
    expect(new URL(page.url()).pathname).toBe('/');
    await app.logoutButton.click();
    await expect(app.loginHeading).toBeVisible();
    expect(page.url()).toBe(start);
    expect(await page.evaluate(() => window.history.length)).toBe(historyLength);
    // The page is the same single screen wherever it was opened from.
    await page.goto(`${env.baseURL}/?view=list#mails`);
    await expect(app.loginHeading).toBeVisible();
  });
});
