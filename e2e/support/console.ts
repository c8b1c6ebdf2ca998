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
  readonly dataRows: Locator;
  readonly footer: Locator;
  readonly footerTotal: Locator;
  readonly footerSelected: Locator;
  /** The list answer the table was last checked to show (see expectRows). */
  shown: MailListResponse | null = null;

  constructor(
    readonly page: Page,
    readonly traffic: Traffic,
    readonly env: SuiteEnv,
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
    const loginCall = await this.traffic.next((c) => isLogin(c) && c.status === 200, mark);
    const token = (loginCall.body as { data: { token: string }[] }).data[0]!.token;
    const list = await this.traffic.nextList(mark);
    await this.expectRows(list);
    return { token, list };
  }

  /** Waits until the table shows exactly the rows of `list`, in order (matched by their ReceivedDate instant). */
  async expectRows(list: MailListResponse): Promise<void> {
    await expect(this.listHeading).toBeVisible();
    if (list.data.length === 0) {
      await expect(this.dataRows).toHaveCount(1);
      await expect(this.dataRows.first()).toHaveText('No data to display');
    } else {
      await expect(this.dataRows).toHaveCount(list.data.length);
      const receivedCells = this.dataRows.locator(`td:nth-child(${SELECT_COLUMNS + COLUMN_NAMES.indexOf('ReceivedDate') + 1})`);
      await expect
        .poll(() => receivedCells.evaluateAll((cells) => cells.map((cell) => cell.getAttribute('title'))))
        .toEqual(list.data.map((mail) => (mail.receivedDate ? utcInstant(mail.receivedDate) : null)));
    }
    this.shown = list;
  }

  row(index: number): Locator {
    return this.dataRows.nth(index);
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
