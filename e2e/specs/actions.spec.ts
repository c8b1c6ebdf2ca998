import type { MailListResponse } from '@outbox/contract';
import { Status, STATUS_NAMES } from '../support/api';
import { expect, test } from '../support/fixtures';
import { isDeleteOf, isDequeueOf } from '../support/traffic';

/** docs/console.md §4: the button of each status (none for Processing). */
const ACTION_OF_STATUS = ['Dequeue', 'Delete', '', 'Delete', 'Delete', 'Delete'] as const;

test.describe('Row actions', () => {
  // Each test starts from app.login(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });

  test('§4 Action button per row: Queued → Dequeue, Processing → no button, Dequeued / ProviderSent / ProviderError / Error → Delete', async ({
    app,
  }) => {
    const seen = new Set<number>();
    const check = async (list: MailListResponse) => {
      // Every row of the page (scrolled through: only the rows in view are mounted): its button's text, or none.
      expect(await app.columnTexts('action')).toEqual(list.data.map((mail) => ACTION_OF_STATUS[mail.status]!));
      for (let code = 0; code < STATUS_NAMES.length; code++) {
        const index = list.data.findIndex((mail) => mail.status === code);
        if (index < 0) continue;
        seen.add(code);
        await app.scrollToRow(index);
        const row = app.row(index);
        await expect(app.cell(row, 'Status')).toHaveText(STATUS_NAMES[code]!);
        const buttons = row.getByRole('button');
        if (code === Status.Processing) await expect(buttons).toHaveCount(0);
        else await expect(buttons).toHaveText([ACTION_OF_STATUS[code]!]);
      }
    };
    await check((await app.login()).list);
    await check(await app.sortBy('Status'));
    await check(await app.sortBy('Status'));
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  test('§4 After a Dequeue the list is reloaded: the Queued row then reads Dequeued, with a Delete button', async ({
    app,
    traffic,
    api,
  }) => {
    const { mail } = await app.showStatus((await app.login()).list, Status.Queued);
    const row = app.rowOf(mail);
    await expect(app.cell(row, 'Status')).toHaveText('Queued');
    const mark = traffic.mark();
    await row.getByRole('button', { name: /^Dequeue mail #\d+$/ }).click();
    const call = await traffic.next(isDequeueOf(mail.id), mark);
    expect(call.status).toBe(200);
    const reloaded = await traffic.nextList(call.seq);
    await app.expectRows(reloaded);
    expect(reloaded.data.find((m) => m.id === mail.id)?.status).toBe(Status.Dequeued);
    await expect(app.cell(row, 'Status')).toHaveText('Dequeued');
    await expect(row.getByRole('button')).toHaveText(['Delete']);
    expect((await api.list({ status: Status.Dequeued })).data.map((m) => m.id)).toContain(mail.id);
  });

  test('§4 After a Delete the list is reloaded: the row is gone, and so is the mail on the server', async ({ app, traffic, api }) => {
    const { list, mail } = await app.showStatus((await app.login()).list, Status.ProviderSent);
    const row = app.rowOf(mail);
    const mark = traffic.mark();
    await row.getByRole('button', { name: /^Delete mail #\d+$/ }).click();
    const call = await traffic.next(isDeleteOf(mail.id), mark);
    expect(call.status).toBe(200);
    const reloaded = await traffic.nextList(call.seq);
    await app.expectRows(reloaded);
    expect(reloaded.data.map((m) => m.id)).not.toContain(mail.id);
    await expect(row).toHaveCount(0);
    expect(reloaded.meta.total).toBe(list.meta.total - 1);
    await expect(app.footerTotal).toHaveText(`total: ${list.meta.total - 1}`);
    expect(await api.ids()).not.toContain(mail.id);
  });

  test('§6 Mails in Processing cannot be acted on: no button in the row, and the server refuses dequeue and delete (409)', async ({
    app,
    api,
  }) => {
    const { mail } = await app.showStatus((await app.login()).list, Status.Processing);
    const row = app.rowOf(mail);
    await expect(app.cell(row, 'Status')).toHaveText('Processing');
    await expect(row.getByRole('button')).toHaveCount(0);
    await expect(app.cell(row, 'action')).toHaveText('');
    expect(await api.dequeue(mail.id)).toBe(409);
    expect(await api.remove(mail.id)).toBe(409);
    expect((await api.list({ status: Status.Processing })).data.map((m) => m.id)).toContain(mail.id);
  });

  test("§8 Dequeue fails → alert 'Unable to Dequeue the mail #{id}' (dequeued behind the console's back: 409)", async ({
    app,
    api,
    page,
    traffic,
    alerts,
  }) => {
    // Without live updates (a server answering 404 to the stream), so the row still offers the stale Dequeue.
    await page.route('**/api/v1/events', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{}' }));
    const { mail } = await app.showStatus((await app.login()).list, Status.Queued);
    const row = app.rowOf(mail);
    await expect(row.getByRole('button')).toHaveText(['Dequeue']);
    expect(await api.dequeue(mail.id)).toBe(200);
    const mark = traffic.mark();
    await row.getByRole('button', { name: /^Dequeue mail #\d+$/ }).click();
    expect(await alerts.next()).toEqual({ type: 'alert', message: `Unable to Dequeue the mail #${mail.id}` });
    const call = await traffic.next(isDequeueOf(mail.id), mark);
    expect(call.status).toBe(409);
    // Reloaded all the same (§4): the row now shows what the server holds.
    await app.expectRows(await traffic.nextList(call.seq));
    await expect(app.cell(row, 'Status')).toHaveText('Dequeued');
  });

  test("§8 Delete fails → alert 'Unable to Delete the mail #{id}' (deleted behind the console's back: 404)", async ({
    app,
    api,
    traffic,
    alerts,
  }) => {
    const { mail } = await app.showStatus((await app.login()).list, Status.ProviderSent);
    const row = app.rowOf(mail);
    expect(await api.remove(mail.id)).toBe(200);
    const mark = traffic.mark();
    await row.getByRole('button', { name: /^Delete mail #\d+$/ }).click();
    expect(await alerts.next()).toEqual({ type: 'alert', message: `Unable to Delete the mail #${mail.id}` });
    const call = await traffic.next(isDeleteOf(mail.id), mark);
    expect(call.status).toBe(404);
    await app.expectRows(await traffic.nextList(call.seq));
    await expect(row).toHaveCount(0);
  });

  test('Beyond the spec (docs/console.md §10.8): the grid is one tab stop; arrows reach the row, → its Dequeue button (named with the mail), Enter dequeues, focus returns to the row', async ({
    app,
    page,
    traffic,
  }) => {
    const { mail } = await app.showStatus((await app.login()).list, Status.Queued);
    const target = app.rowOf(mail);
    const button = target.getByRole('button', { name: `Dequeue mail #${mail.id}`, exact: true });
    await expect(button).toHaveText('Dequeue');
    await app.logoutButton.focus();
    let tabs = 0;
    const inGrid = () => page.evaluate(() => document.activeElement?.closest('[role="grid"] tbody') !== null);
    while (!(await inGrid())) {
      expect(++tabs, 'Tab presses to reach the grid').toBeLessThan(40);
      await page.keyboard.press('Tab');
    }
    await expect(app.row(0)).toBeFocused();
    // One tab stop: the next Tab leaves the grid.
    await page.keyboard.press('Tab');
    expect(await inGrid()).toBe(false);
    await page.keyboard.press('Shift+Tab');
    await expect(app.row(0)).toBeFocused();
    // The target row may be out of view now (only the rows in view are mounted): ask which mail has focus.
    const focusedMailId = () => page.evaluate(() => document.activeElement?.getAttribute('data-mail-id'));
    for (let step = 0; step < 60 && (await focusedMailId()) !== String(mail.id); step++) {
      await page.keyboard.press('ArrowDown');
    }
    await expect(target).toBeFocused();
    await page.keyboard.press('ArrowRight');
    await expect(button).toBeFocused();
    const mark = traffic.mark();
    await page.keyboard.press('Enter');
    const call = await traffic.next(isDequeueOf(mail.id), mark);
    expect(call.status).toBe(200);
    await app.expectRows(await traffic.nextList(call.seq));
    await expect(app.cell(app.rowOf(mail), 'Status')).toHaveText('Dequeued');
    await expect(app.rowOf(mail)).toBeFocused();
  });
});
