/** Keyboard focus on the rows: the grid's roving tab stop, the skip link, and where focus goes after an action. */
import type { Mail } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildMail, buildMailList } from '../../../test/factories';
import { server } from '../../../test/server';
import { MailsListView } from './mails-list-view';

/** A busy two-core machine renders slowly: wait longer than Testing Library's 1 s default. */
const SLOW = { timeout: 4000 };

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
  await screen.findByText('mail 0', undefined, SLOW);
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
    await waitFor(() => expect(screen.queryByText('mail 2')).not.toBeInTheDocument(), SLOW);
    await waitFor(() => expect(rowOf('mail 3')).toHaveFocus(), SLOW);
  });

  it('after a Delete of the last row, focus goes to the row now last', async () => {
    const user = await renderView();
    await user.click(screen.getByText('Skip to the mails table'));
    await user.keyboard('{End}{ArrowRight}{Enter}');
    await waitFor(() => expect(screen.queryByText('mail 24')).not.toBeInTheDocument(), SLOW);
    await waitFor(() => expect(rowOf('mail 23')).toHaveFocus(), SLOW);
  });
});
