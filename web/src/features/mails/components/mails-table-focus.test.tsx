/**
 * Keyboard focus on the rows: the grid's roving tab stop, the skip link, and where focus goes after an action;
 * and the virtualized body: only the rows in view mounted, focus mounting the row it moves to.
 */
import type { Mail } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { act, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildMail, buildMailList } from '../../../test/factories';
import { server } from '../../../test/server';
import { scrollTableTo, setTableViewportHeight } from '../../../test/table-viewport';
import { MailsListView } from './mails-list-view';
import { ROW_OVERSCAN } from './use-row-virtualizer';
import { HEADER_HEIGHT, ROW_HEIGHT } from './table-layout';

/** A busy two-core machine renders slowly: wait longer than Testing Library's 1 s default. */

let mails: Mail[] = [];

beforeEach(() => {
  mails = Array.from({ length: 25 }, (_, index) => buildMail({ id: 100 + index, status: 3, subject: `mail ${index}` }));
  server.use(
    http.get('/api/v1/mail/list', () => HttpResponse.json(buildMailList(mails))),
    http.get('/api/v1/mail/:id', () => HttpResponse.json({ error: { code: 'not_found', message: 'no such mail' } }, { status: 404 })),
    http.delete('/api/v1/mail/:id', ({ params }) => {
      mails = mails.filter((mail) => mail.id !== Number(params.id));
      return HttpResponse.json({ data: [{ id: Number(params.id) }] });
    }),
  );
});

async function renderView() {
  const user = userEvent.setup();
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <MailsListView token="focus-token" onLogout={vi.fn()} />
    </QueryClientProvider>,
  );
  await screen.findByText('mail 0');
  return user;
}

function rowOf(subject: string): HTMLElement {
  const row = screen.getByText(subject).closest('tr');
  if (!row) throw new Error(`no row holds ${subject}`);
  return row;
}

describe('keyboard focus on the rows', () => {
  it('the skip link focuses the tab stop row; arrows, PageDown, End and Home move between rows, clamped at the ends', async () => {
    const user = await renderView();
    await user.click(screen.getByText('Skip to the mails table'));
    expect(rowOf('mail 0')).toHaveFocus();
    expect(rowOf('mail 0')).toHaveAttribute('tabindex', '0');

    await user.keyboard('{ArrowDown}');
    expect(rowOf('mail 1')).toHaveFocus();
    await user.keyboard('{PageDown}');
    expect(rowOf('mail 11')).toHaveFocus();
    await user.keyboard('{PageDown}{PageDown}');
    expect(rowOf('mail 24')).toHaveFocus();
    await user.keyboard('{ArrowDown}');
    expect(rowOf('mail 24')).toHaveFocus();
    await user.keyboard('{Home}');
    expect(rowOf('mail 0')).toHaveFocus();
    await user.keyboard('{ArrowUp}');
    expect(rowOf('mail 0')).toHaveFocus();
    await user.keyboard('{End}{PageUp}');
    expect(rowOf('mail 14')).toHaveFocus();

    // The row focused last keeps the tab stop: the skip link comes back to it.
    expect(rowOf('mail 14')).toHaveAttribute('tabindex', '0');
    await user.click(screen.getByText('Skip to the mails table'));
    expect(rowOf('mail 14')).toHaveFocus();
  });

  it('→ reaches the row button and ← returns to the row', async () => {
    const user = await renderView();
    await user.click(screen.getByText('Skip to the mails table'));
    await user.keyboard('{ArrowDown}{ArrowRight}');
    expect(within(rowOf('mail 1')).getByRole('button', { name: 'Delete mail #101' })).toHaveFocus();
    await user.keyboard('{ArrowLeft}');
    expect(rowOf('mail 1')).toHaveFocus();
  });

  it('after a Delete from the keyboard, focus goes to the row now in the deleted mail’s place', async () => {
    const user = await renderView();
    await user.click(screen.getByText('Skip to the mails table'));
    await user.keyboard('{ArrowDown}{ArrowDown}{ArrowRight}');
    expect(within(rowOf('mail 2')).getByRole('button', { name: 'Delete mail #102' })).toHaveFocus();
    await user.keyboard('{Enter}');
    await waitFor(() => expect(screen.queryByText('mail 2')).not.toBeInTheDocument());
    await waitFor(() => expect(rowOf('mail 3')).toHaveFocus());
  });

  it('after a Delete of the last row, focus goes to the row now last', async () => {
    const user = await renderView();
    await user.click(screen.getByText('Skip to the mails table'));
    await user.keyboard('{End}{ArrowRight}{Enter}');
    await waitFor(() => expect(screen.queryByText('mail 24')).not.toBeInTheDocument());
    await waitFor(() => expect(rowOf('mail 23')).toHaveFocus());
  });
});

describe('the virtualized body (docs/console.md §10.1)', () => {
  /** Six rows in view below the header: a 50-row page mounts a fraction of its rows. */
  const ROWS_IN_VIEW = 6;

  beforeEach(() => {
    mails = Array.from({ length: 50 }, (_, index) => buildMail({ id: 100 + index, status: 3, subject: `mail ${index}` }));
    setTableViewportHeight(HEADER_HEIGHT + ROWS_IN_VIEW * ROW_HEIGHT);
  });

  const mountedRows = () => within(screen.getAllByRole('rowgroup')[1]!).getAllByRole('row');
  const scrollElement = () => screen.getByRole('grid').closest('.table-scroll')!;

  it('mounts only the rows in view, each with its aria-rowindex in a grid counting the whole page', async () => {
    await renderView();
    const grid = screen.getByRole('grid', { name: 'Mails' });
    expect(grid).toHaveAttribute('aria-rowcount', '51');
    expect(within(screen.getAllByRole('rowgroup')[0]!).getByRole('row')).toHaveAttribute('aria-rowindex', '1');
    const rows = mountedRows();
    expect(rows.length).toBeGreaterThanOrEqual(ROWS_IN_VIEW);
    expect(rows.length).toBeLessThanOrEqual(ROWS_IN_VIEW + 2 * ROW_OVERSCAN + 1);
    expect(rows.map((row) => row.getAttribute('aria-rowindex'))).toEqual(rows.map((_, index) => String(index + 2)));
    expect(screen.queryByText('mail 49')).not.toBeInTheDocument();
    // The body is as tall as the whole page, so the scroll bar reads the page's 50 rows.
    expect(grid.querySelector('tbody')).toHaveStyle({ height: `${50 * ROW_HEIGHT}px` });

    // A scroll to row 40 mounts the rows around it; the first row stays, as it holds the grid's tab stop.
    act(() => scrollTableTo(scrollElement(), 40 * ROW_HEIGHT));
    await waitFor(() => expect(rowOf('mail 40')).toHaveAttribute('aria-rowindex', '42'));
    expect(rowOf('mail 49')).toHaveAttribute('aria-rowindex', '51');
    expect(screen.queryByText('mail 20')).not.toBeInTheDocument();
    expect(rowOf('mail 0')).toHaveAttribute('tabindex', '0');
  });

  it('keyboard focus moving to a row out of view mounts it, scrolls to it and focuses it', async () => {
    const user = await renderView();
    await user.click(screen.getByText('Skip to the mails table'));
    expect(rowOf('mail 0')).toHaveFocus();

    await user.keyboard('{PageDown}');
    await waitFor(() => expect(rowOf('mail 10')).toHaveFocus());
    // Row 10 is brought to the bottom of the six rows in view.
    expect(scrollElement().scrollTop).toBe((10 + 1 - ROWS_IN_VIEW) * ROW_HEIGHT);

    await user.keyboard('{End}');
    await waitFor(() => expect(rowOf('mail 49')).toHaveFocus());
    expect(rowOf('mail 49')).toHaveAttribute('aria-rowindex', '51');
    await user.keyboard('{ArrowUp}');
    await waitFor(() => expect(rowOf('mail 48')).toHaveFocus());

    await user.keyboard('{Home}');
    await waitFor(() => expect(rowOf('mail 0')).toHaveFocus());
    expect(scrollElement().scrollTop).toBe(0);
  });

  it('after an empty answer, the next page of rows is drawn (the virtualizer starts again from no rows)', async () => {
    server.use(
      http.get('/api/v1/mail/list', ({ request }) =>
        HttpResponse.json(buildMailList(new URL(request.url).searchParams.get('q') === 'nothing' ? [] : mails)),
      ),
    );
    const user = await renderView();
    const search = screen.getByRole('searchbox', { name: 'Search sender, recipients and subject' });
    await user.type(search, 'nothing');
    expect(await screen.findByText('No data to display')).toBeInTheDocument();
    // Back to the answer already cached: it is drawn at once, rows and all.
    await user.clear(search);
    await waitFor(() => expect(rowOf('mail 0')).toHaveAttribute('aria-rowindex', '2'));
    expect(mountedRows().length).toBeGreaterThanOrEqual(ROWS_IN_VIEW);
  });

  it('"Select all on this page" selects the rows not mounted too; they show it once scrolled to', async () => {
    const user = await renderView();
    await user.click(screen.getByRole('checkbox', { name: 'Select all on this page' }));
    expect(screen.getByText('selected: 50')).toBeInTheDocument();
    act(() => scrollTableTo(scrollElement(), 44 * ROW_HEIGHT));
    await waitFor(() => expect(screen.getByRole('checkbox', { name: 'Select mail #149' })).toBeChecked());
    expect(rowOf('mail 49')).toHaveAttribute('aria-selected', 'true');
  });
});
