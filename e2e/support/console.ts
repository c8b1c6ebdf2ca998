/**
 * The console as an operator sees it, through accessible roles and names (getByRole / getByLabel): the login
 * view, the MAILS LIST header, the table (table → rowgroup → row → columnheader / cell) and its footer.
 */
import { expect, type Locator, type Page } from '@playwright/test';
import type { Mail, MailListResponse } from '@outbox/contract';
import type { SuiteEnv } from './env';
import { isList, isLogin, type Traffic } from './traffic';

/** docs/console.md §2 table columns, in order; the eighth is the unnamed action column. */
export const COLUMN_NAMES = ['From', 'To', 'Subject', 'Status', 'ProviderSentDate', 'ReceivedDate', 'LastUpdate'] as const;
export type ColumnName = (typeof COLUMN_NAMES)[number];
export const ACTION_COLUMN_INDEX = COLUMN_NAMES.length;
/**
 * Beyond the spec (docs/console.md §10): a selection column (checkboxes) comes before the spec's columns.
 * `columnHeaders` and `cell()` count the spec's columns only; raw cell positions add this.
 */
export const SELECT_COLUMNS = 1;

/** docs/console.md §9 business constants. */
export const PAGE_SIZE = 50;
export const HEADER_HEIGHT = 50;
export const FOOTER_HEIGHT = 50;
export const ROW_HEIGHT = 60;
export const ACTION_COLUMN_WIDTH = 70;
export const STATUS_ICON_SIZE = 30;

/** The exact UTC instant the console puts in a date cell's tooltip. */
export function utcInstant(iso: string): string {
  return new Date(iso).toISOString();
}

export interface LoginOutcome {
  token: string;
  list: MailListResponse;
}

export class ConsolePage {
  readonly loginHeading: Locator;
  readonly username: Locator;
  readonly password: Locator;
  readonly loginButton: Locator;
  readonly listHeading: Locator;
  readonly logoutButton: Locator;
  readonly table: Locator;
  readonly headerRow: Locator;
  readonly columnHeaders: Locator;
  readonly body: Locator;
  /**
   * The body's rows that are mounted: the table draws only the rows in view of its 50-row page
   * (docs/console.md §10.1), so a row far down is in the DOM once scrolled to (`scrollToRow`, `columnTexts`).
   */
  readonly dataRows: Locator;
  readonly footer: Locator;
  readonly footerTotal: Locator;
  readonly footerSelected: Locator;
  /** The list answer the table was last checked to show (see expectRows). */
  shown: MailListResponse | null = null;

  /**
   * @param atLoginView the page came from the worker's previous test, logged out there in-app and left on a
   * fresh login view (`reusePage` in fixtures.ts): the first `open()` keeps that view instead of loading the
   * console again, if the page still shows it.
   */
  constructor(
    readonly page: Page,
    readonly traffic: Traffic,
    readonly env: SuiteEnv,
    private atLoginView = false,
  ) {
    this.loginHeading = page.getByRole('heading', { name: 'LOGIN', exact: true });
    this.username = page.getByLabel('Username', { exact: true });
    this.password = page.getByLabel('Password', { exact: true });
    this.loginButton = page.getByRole('button', { name: 'Login', exact: true });
    this.listHeading = page.getByRole('heading', { name: 'MAILS LIST', exact: true });
    this.logoutButton = page.getByRole('button', { name: 'Logout', exact: true });
    this.table = page.getByRole('grid', { name: 'Mails' });
    this.headerRow = this.table.getByRole('rowgroup').first().getByRole('row');
    // The spec's eight headers: the selection column's header holds a checkbox.
    this.columnHeaders = this.headerRow.getByRole('columnheader').filter({ hasNot: page.getByRole('checkbox') });
    this.body = this.table.getByRole('rowgroup').nth(1);
    this.dataRows = this.body.getByRole('row');
    this.footerTotal = page.getByText(/^total: \d+$/);
    this.footerSelected = page.getByText(/^selected: \d+$/);
    this.footer = page.locator('footer').filter({ has: this.footerTotal });
  }

  /** Opens the console; with no token held it shows the login view. */
  async open(): Promise<void> {
    if (this.atLoginView) {
      this.atLoginView = false;
      if (await showsFreshLoginView(this.page, this.env.baseURL)) return;
    }
    await this.page.goto('/');
    await expect(this.loginHeading).toBeVisible();
  }

  async fillLogin(username: string, password: string): Promise<void> {
    await this.username.fill(username);
    await this.password.fill(password);
  }

  /**
   * Logs in through the login view with the configured operator and waits for the first page of the list.
   * Returns the token the server gave and the list answer the console rendered (the source of truth for
   * which mail sits in which row).
   */
  async login(): Promise<LoginOutcome> {
    await this.open();
    await this.fillLogin(this.env.username, this.env.password);
    const mark = this.traffic.mark();
    await this.loginButton.click();
    // The server hashes the password (slow by design): past the 10 s default at load 20 with scrypt 2^17 once.
    const loginCall = await this.traffic.next((c) => isLogin(c) && c.status === 200, mark, 30_000);
    const token = (loginCall.body as { data: { token: string }[] }).data[0]!.token;
    const list = await this.traffic.nextList(mark);
    await this.expectRows(list);
    return { token, list };
  }

  /**
   * Waits until the table shows exactly the rows of `list`, in order (matched by their ReceivedDate instant):
   * the grid counts the header and every row of the page (aria-rowcount), and every mounted row is the mail
   * the answer has at its aria-rowindex.
   */
  async expectRows(list: MailListResponse): Promise<void> {
    await expect(this.listHeading).toBeVisible();
    if (list.data.length === 0) {
      await expect(this.dataRows).toHaveCount(1);
      await expect(this.dataRows.first()).toHaveText('No data to display');
    } else {
      await expect(this.table).toHaveAttribute('aria-rowcount', String(list.data.length + 1));
      const expected = list.data.map((mail) => (mail.receivedDate ? utcInstant(mail.receivedDate) : null));
      const receivedColumn = SELECT_COLUMNS + COLUMN_NAMES.indexOf('ReceivedDate');
      await expect
        .poll(async () => {
          const mounted = await this.dataRows.evaluateAll(
            (rows, column) =>
              rows.map(
                (row) =>
                  [
                    Number(row.getAttribute('aria-rowindex')),
                    (row as HTMLTableRowElement).cells[column]?.getAttribute('title') ?? null,
                  ] as const,
              ),
            receivedColumn,
          );
          const misplaced = mounted.filter(([rowIndex, title]) => expected[rowIndex - 2] !== title);
          return mounted.length === 0 ? 'no row mounted' : misplaced.map(([rowIndex]) => rowIndex);
        })
        .toEqual([]);
    }
    this.shown = list;
  }

  /** The row at `index` of the page (from 0), by its aria-rowindex: mounted when in view (`scrollToRow`). */
  row(index: number): Locator {
    return this.body.locator(`tr[aria-rowindex="${index + 2}"]`);
  }

  /** Scrolls the table so that the row at `index` of the page is in view below the header, and waits for it. */
  async scrollToRow(index: number): Promise<void> {
    await this.table.evaluate((table, top) => table.closest('.table-scroll')!.scrollTo({ top }), index * ROW_HEIGHT);
    await expect(this.row(index)).toBeVisible();
  }

  /**
   * The text of one column in every row of the page, in order: the table is scrolled from the top to the end
   * a viewport at a time (only the rows in view are mounted), then back to the top.
   */
  async columnTexts(column: ColumnName | 'action'): Promise<string[]> {
    const cellIndex = SELECT_COLUMNS + (column === 'action' ? ACTION_COLUMN_INDEX : COLUMN_NAMES.indexOf(column));
    const texts = await this.table.evaluate(async (table, cellIndex) => {
      const scroller = table.closest('.table-scroll')!;
      const byRow = new Map<number, string>();
      // The next frame, or at most 250 ms: a page that draws no frame then reads back what is mounted (and the
      // test fails on the rows it lacks) instead of waiting until the test's deadline.
      const frame = () =>
        new Promise((resolve) => {
          const fallback = setTimeout(resolve, 250);
          requestAnimationFrame(() => {
            clearTimeout(fallback);
            setTimeout(resolve, 0);
          });
        });
      for (let top = 0; ; top += Math.max(scroller.clientHeight - 100, 60)) {
        scroller.scrollTo({ top });
        await frame();
        await frame();
        for (const row of Array.from(table.querySelectorAll<HTMLTableRowElement>('tbody tr[aria-rowindex]'))) {
          byRow.set(Number(row.getAttribute('aria-rowindex')), row.cells[cellIndex]?.textContent ?? '');
        }
        if (top + scroller.clientHeight >= scroller.scrollHeight) break;
      }
      scroller.scrollTo({ top: 0 });
      await frame();
      return [...byRow.entries()].sort(([a], [b]) => a - b).map(([, text]) => text);
    }, cellIndex);
    return texts;
  }

  /** The row of `mail`, found by its ReceivedDate cell's exact UTC instant (a tooltip; unique in the data). */
  rowOf(mail: Mail): Locator {
    return this.dataRows.filter({ has: this.page.getByTitle(utcInstant(mail.receivedDate!), { exact: true }) });
  }

  cell(row: Locator, column: ColumnName | 'action'): Locator {
    const index = column === 'action' ? ACTION_COLUMN_INDEX : COLUMN_NAMES.indexOf(column);
    return row.getByRole('gridcell').nth(SELECT_COLUMNS + index);
  }

  columnHeader(name: ColumnName): Locator {
    return this.columnHeaders.filter({ hasText: new RegExp(`^${name}$`) });
  }

  get actionHeader(): Locator {
    return this.columnHeaders.nth(ACTION_COLUMN_INDEX);
  }

  /** Clicks a column header's sort button and returns the list answer that follows. */
  async sortBy(name: ColumnName): Promise<MailListResponse> {
    const mark = this.traffic.mark();
    await this.columnHeader(name).getByRole('button').click();
    const list = await this.traffic.nextList(mark);
    await this.expectRows(list);
    return list;
  }

  /**
   * Brings a mail with `status` onto the screen: the page shown if it has one, else the first page sorted by
   * Status ascending (Queued, Dequeued, Processing first), else descending (Error, ProviderError first).
   */
  async showStatus(list: MailListResponse, status: number): Promise<{ list: MailListResponse; index: number; mail: Mail }> {
    let current = list;
    let index = current.data.findIndex((mail) => mail.status === status);
    for (let click = 0; index < 0 && click < 2; click++) {
      current = await this.sortBy('Status');
      index = current.data.findIndex((mail) => mail.status === status);
    }
    expect(index, `a mail with status ${status} on a first page`).toBeGreaterThanOrEqual(0);
    const mail = current.data[index]!;
    await this.scrollToRow(index);
    await expect(this.rowOf(mail)).toHaveCount(1);
    return { list: current, index, mail };
  }

  /** The status filter chip of `name` ("All" or a status name), whose text ends with its count. */
  statusChip(name: string): Locator {
    return this.page.getByRole('group', { name: 'Status' }).getByRole('button', { name: new RegExp(`^${name}[\\s\\d,]*$`) });
  }

  get search(): Locator {
    return this.page.getByRole('searchbox', { name: 'Search sender, recipients and subject' });
  }

  /** Counts list calls made after `mark`. */
  listCalls(mark = 0): number {
    return this.traffic.count(isList, mark);
  }
}

/** `page` is the console at its bare address, on the login view with both fields empty: what `goto('/')` shows. */
async function showsFreshLoginView(page: Page, baseURL: string): Promise<boolean> {
  return (
    page.url() === new URL('/', baseURL).href &&
    (await page.getByRole('heading', { name: 'LOGIN', exact: true }).isVisible()) &&
    (await page.getByLabel('Username', { exact: true }).inputValue()) === '' &&
    (await page.getByLabel('Password', { exact: true }).inputValue()) === ''
  );
}

/**
 * Leaves `page` on the console's fresh login view at `baseURL`, ending its session as an operator does (Logout),
 * and waits for the login view and the server's answer to the logout. True if the page shows that view now: it was
 * there already, or it showed the list view with no modal dialog over it (an open detail drawer is closed first
 * with its own button: it lies over the header's Logout). False, doing nothing, otherwise (another page, a modal
 * panel or confirmation open, a login view with something typed in it).
 */
export async function logOutInApp(page: Page, baseURL: string): Promise<boolean> {
  if (!page.url().startsWith(new URL('/', baseURL).href)) return false;
  if (await showsFreshLoginView(page, baseURL)) return true;
  const covered = await page.evaluate(() => document.querySelector('[aria-modal="true"], dialog[open]') !== null);
  const logout = page.getByRole('button', { name: 'Logout', exact: true });
  if (covered || !(await page.getByRole('heading', { name: 'MAILS LIST', exact: true }).isVisible()) || !(await logout.isVisible())) {
    return false;
  }
  const closeDetail = page.getByRole('button', { name: 'Close detail', exact: true });
  if (await closeDetail.isVisible()) {
    await closeDetail.click({ timeout: 5_000 });
    await expect(closeDetail).toHaveCount(0);
  }
  const answered = page.waitForResponse(
    (response) => response.request().method() === 'POST' && new URL(response.url()).pathname === '/api/v1/logout',
  );
  // Not awaited if the click fails: that failure is the one reported.
  answered.catch(() => undefined);
  await logout.click({ timeout: 5_000 });
  await answered;
  await expect(page.getByRole('heading', { name: 'LOGIN', exact: true })).toBeVisible();
  return true;
}
