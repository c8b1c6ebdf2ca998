import type { Mail, MailListResponse } from '@outbox/contract';
import type { Locator } from '@playwright/test';
import { STATUS_NAMES } from '../support/api';
import { type COLUMN_NAMES, STATUS_ICON_SIZE, utcInstant } from '../support/console';
import { expect, test } from '../support/fixtures';

/** docs/console.md §10.8 status colours (yellow #F5B700, green #2E9D4F, red #D64545), as computed CSS colours. */
const YELLOW = 'rgb(245, 183, 0)';
const GREEN = 'rgb(46, 157, 79)';
const RED = 'rgb(214, 69, 69)';
const COLOUR_OF_STATUS = [YELLOW, YELLOW, YELLOW, GREEN, RED, RED] as const;

async function box(locator: Locator) {
  const measured = await locator.boundingBox();
  expect(measured, 'element is laid out').not.toBeNull();
  return measured!;
}

test.describe('Table cells', () => {
  // Each test starts from app.login(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });

  test('§3 From cell: sender name above sender mail', async ({ app }) => {
    const { list } = await app.login();
    // Other specs share this server and may submit mails without a sender name while this one runs; the
    // layout is checked on rows that have both lines (the every-row check below covers the others).
    const named = list.data.flatMap((mail, index) => (mail.fromName ? [index] : []));
    expect(named.length, 'mails with a sender name on the first page').toBeGreaterThanOrEqual(3);
    for (const index of [named[0]!, named[1]!, named[named.length - 1]!]) {
      const mail = list.data[index]!;
      await app.scrollToRow(index);
      const cell = app.cell(app.row(index), 'From');
      await expect(cell).toHaveText(`${mail.fromName}${mail.fromMail}`);
      const name = cell.getByText(mail.fromName, { exact: true });
      const address = cell.getByText(mail.fromMail, { exact: true });
      await expect(name).toBeVisible();
      await expect(address).toBeVisible();
      const nameBox = await box(name);
      const addressBox = await box(address);
      expect(nameBox.y + nameBox.height).toBeLessThanOrEqual(addressBox.y + 0.5);
      expect(Math.abs(nameBox.x - addressBox.x)).toBeLessThan(1);
    }
    // Every row: name then mail, as the server has them.
    expect(await app.columnTexts('From')).toEqual(list.data.map((mail) => `${mail.fromName}${mail.fromMail}`));
  });

  test("§3 To cell: one line per recipient, 'name | mail'", async ({ app }) => {
    const { list } = await app.login();
    const many = list.data.findIndex((mail) => mail.to.length >= 2);
    const one = list.data.findIndex((mail) => mail.to.length === 1);
    expect(many, 'a mail with two or more recipients on the first page').toBeGreaterThanOrEqual(0);
    expect(one, 'a mail with one recipient on the first page').toBeGreaterThanOrEqual(0);

    for (const index of [many, one]) {
      const mail = list.data[index]!;
      await app.scrollToRow(index);
      const cell = app.cell(app.row(index), 'To');
      const lines = mail.to.map((r) => `${r.recipientName} | ${r.recipientMail}`);
      await expect(cell).toHaveText(lines.join(''));
      let previousBottom = -Infinity;
      for (const line of lines.slice(0, 3)) {
        const lineBox = await box(cell.getByText(line, { exact: true }));
        expect(lineBox.y).toBeGreaterThanOrEqual(previousBottom - 0.5);
        previousBottom = lineBox.y + lineBox.height;
      }
    }
    expect(await app.columnTexts('To')).toEqual(
      list.data.map((mail) => mail.to.map((r) => `${r.recipientName} | ${r.recipientMail}`).join('')),
    );
  });

  test('§3 To cell with more recipients than a 60 px row holds: whole lines from the first, none squeezed or overlapping', async ({
    app,
  }) => {
    const { list } = await app.login();
    const index = list.data.findIndex((mail) => mail.to.length >= 4);
    expect(index, 'a mail with four or more recipients on the first page').toBeGreaterThanOrEqual(0);
    await app.scrollToRow(index);
    const cell = app.cell(app.row(index), 'To');
    const layout = await cell.evaluate((td) => {
      const stack = td.firstElementChild!;
      return {
        top: stack.getBoundingClientRect().top,
        lines: Array.from(stack.children).map((line) => ({
          top: line.getBoundingClientRect().top,
          height: line.getBoundingClientRect().height,
          lineHeight: parseFloat(getComputedStyle(line).lineHeight),
        })),
      };
    });
    expect(layout.lines[0]!.top, 'the first recipient line starts inside the cell').toBeGreaterThanOrEqual(layout.top - 0.5);
    let previousBottom = -Infinity;
    for (const line of layout.lines) {
      expect(line.height, 'a recipient line keeps its full line height').toBeGreaterThanOrEqual(line.lineHeight - 0.5);
      expect(line.top, 'recipient lines do not overlap').toBeGreaterThanOrEqual(previousBottom - 0.5);
      previousBottom = line.top + line.height;
    }
  });

  test('§3 Subject cell shows the subject', async ({ app }) => {
    const { list } = await app.login();
    await expect(app.cell(app.row(0), 'Subject')).toHaveText(list.data[0]!.subject);
    expect(await app.columnTexts('Subject')).toEqual(list.data.map((mail) => mail.subject));
  });

  test('§3 / §4 / §9 Status cell: a round 30×30 icon in the status colour (yellow 0–2, green 3, red 4–5) with the status name beside it, for all six statuses', async ({
    app,
  }) => {
    const seen = new Set<number>();
    const check = async (list: MailListResponse) => {
      expect(await app.columnTexts('Status')).toEqual(list.data.map((mail) => STATUS_NAMES[mail.status]!));
      for (let code = 0; code < STATUS_NAMES.length; code++) {
        const index = list.data.findIndex((mail) => mail.status === code);
        if (index < 0 || seen.has(code)) continue;
        seen.add(code);
        await app.scrollToRow(index);
        const cell = app.cell(app.row(index), 'Status');
        const icon = cell.getByTestId('status-icon');
        const name = cell.getByText(STATUS_NAMES[code]!, { exact: true });
        await expect(name).toBeVisible();
        const iconBox = await box(icon);
        expect([iconBox.width, iconBox.height]).toEqual([STATUS_ICON_SIZE, STATUS_ICON_SIZE]);
        const style = await icon.evaluate((element) => {
          const computed = getComputedStyle(element);
          return { radius: computed.borderRadius, colour: computed.backgroundColor };
        });
        // Round: 50% of a 30 px square (Chromium reports the specified percentage).
        expect(['50%', '15px']).toContain(style.radius);
        expect(style.colour, `colour of ${STATUS_NAMES[code]}`).toBe(COLOUR_OF_STATUS[code]);
        // The name is beside the icon: to its right, on the same line.
        const nameBox = await box(name);
        expect(nameBox.x).toBeGreaterThanOrEqual(iconBox.x + iconBox.width);
        expect(nameBox.y).toBeLessThan(iconBox.y + iconBox.height);
        expect(nameBox.y + nameBox.height).toBeGreaterThan(iconBox.y);
      }
    };
    // The default order (newest first), then Status ascending (Queued first) and descending (Error first):
    // between them the first pages show all six statuses.
    await check((await app.login()).list);
    await check(await app.sortBy('Status'));
    await check(await app.sortBy('Status'));
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  test.describe('in the time zone Asia/Kolkata', () => {
    test.use({ timezoneId: 'Asia/Kolkata' });

    test('§3 Date cells (ProviderSentDate, ReceivedDate, LastUpdate): local time, the exact UTC instant on hover', async ({ app }) => {
      const local = new Intl.DateTimeFormat('sv-SE', {
        timeZone: 'Asia/Kolkata',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hourCycle: 'h23',
      });
      const { list } = await app.login();
      const dates: [(typeof COLUMN_NAMES)[number], (mail: Mail) => string | null][] = [
        ['ProviderSentDate', (mail) => mail.providerSentDate],
        ['ReceivedDate', (mail) => mail.receivedDate],
        ['LastUpdate', (mail) => mail.lastUpdate],
      ];
      for (const [column, value] of dates) {
        expect(await app.columnTexts(column)).toEqual(list.data.map((mail) => (value(mail) ? local.format(new Date(value(mail)!)) : '')));
      }
      const sent = list.data.findIndex((mail) => mail.providerSentDate !== null);
      const unsent = list.data.findIndex((mail) => mail.providerSentDate === null);
      expect(sent).toBeGreaterThanOrEqual(0);
      expect(unsent).toBeGreaterThanOrEqual(0);
      const mail = list.data[sent]!;
      await app.scrollToRow(sent);
      for (const [column, value] of dates) {
        const cell = app.cell(app.row(sent), column);
        await expect(cell).toHaveAttribute('title', utcInstant(value(mail)!));
        // Local time really differs from UTC here (+05:30).
        await expect(cell).not.toHaveText(utcInstant(value(mail)!).slice(0, 19).replace('T', ' '));
      }
      // A mail not yet sent has an empty ProviderSentDate cell.
      await app.scrollToRow(unsent);
      await expect(app.cell(app.row(unsent), 'ProviderSentDate')).toHaveText('');
    });
  });
});
