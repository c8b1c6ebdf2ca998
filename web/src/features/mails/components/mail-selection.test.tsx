import { QueryClientProvider } from '@tanstack/react-query';
import { act, render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { createTestQueryClient, handleMailList } from '../../../test/app-harness';
import { buildMail, buildMailList } from '../../../test/factories';
import { MailsListView } from './mails-list-view';
import type { MailSelection } from './use-mail-selection';

function renderView() {
  const user = userEvent.setup();
  const seen: { selection: MailSelection | null; onActed: (() => void) | null } = { selection: null, onActed: null };
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <MailsListView
        token="t"
        onLogout={vi.fn()}
        renderSelection={(selection, onActed) => {
          seen.selection = selection;
          seen.onActed = onActed;
          return null;
        }}
      />
    </QueryClientProvider>,
  );
  return { user, seen };
}

const mails = [buildMail({ id: 11, status: 0, subject: 'one' }), buildMail({ id: 12, status: 4, subject: 'two' })];

describe('row selection (the selection column)', () => {
  it('the header checkbox selects the page; a row checkbox toggles its row without opening it', async () => {
    handleMailList(buildMailList(mails));
    const { user, seen } = renderView();
    const all = await screen.findByRole('checkbox', { name: 'Select all on this page' });
    await screen.findByText('one');
    await user.click(all);
    expect(screen.getByText('selected: 2')).toBeInTheDocument();
    expect(seen.selection!.mails).toEqual([
      { id: 11, status: 0 },
      { id: 12, status: 4 },
    ]);
    await user.click(screen.getByRole('checkbox', { name: 'Select mail #12' }));
    expect(screen.getByText('selected: 1')).toBeInTheDocument();
    expect(all).toHaveProperty('indeterminate', true);
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('"select all matching" selects the whole filter (the footer counts it) until a row is unticked', async () => {
    window.history.replaceState(null, '', '/?status=0,4');
    handleMailList(buildMailList(mails, { total: 120 }));
    const { user, seen } = renderView();
    await screen.findByText('one');
    expect(seen.selection!.canSelectAllMatching).toBe(false);
    await user.click(screen.getByRole('checkbox', { name: 'Select all on this page' }));
    expect(seen.selection!.canSelectAllMatching).toBe(true);
    act(() => seen.selection!.selectAllMatching());
    expect(screen.getByText('selected: 120')).toBeInTheDocument();
    expect(seen.selection!.matching).toEqual({ filter: { status: '0,4' }, total: 120, statuses: [0, 4] });
    expect(seen.selection!.canSelectAllMatching).toBe(false);

    await user.click(screen.getByRole('checkbox', { name: 'Select mail #11' }));
    expect(seen.selection!.matching).toBeNull();
    expect(screen.getByText('selected: 1')).toBeInTheDocument();

    act(() => seen.selection!.selectAllMatching());
    act(() => seen.onActed!());
    await waitFor(() => expect(screen.getByText('selected: 0')).toBeInTheDocument());
  });

  it('one application\'s list offers no "select all matching" (a bulk filter has no application), only its rows', async () => {
    window.history.replaceState(null, '', '/?status=0,4&application=7');
    const urls = handleMailList(buildMailList(mails, { total: 120 }));
    const { user, seen } = renderView();
    await screen.findByText('one');
    expect(urls.at(-1)!.searchParams.get('application')).toBe('7');
    expect(screen.getByRole('button', { name: 'Application: #7, clear this filter' })).toBeInTheDocument();
    await user.click(screen.getByRole('checkbox', { name: 'Select all on this page' }));
    expect(seen.selection!.canSelectAllMatching).toBe(false);
    expect(seen.selection!.mails.map((m) => m.id)).toEqual([11, 12]);
    expect(seen.selection!.matching).toBeNull();
  });

  it('narrowing to an application (the Overview\'s click) ends a "select all matching" of the wider list', async () => {
    window.history.replaceState(null, '', '/?status=0,4');
    handleMailList(buildMailList(mails, { total: 120 }));
    const seen: { selection: MailSelection | null } = { selection: null };
    const client = createTestQueryClient();
    const view = (filterRequest: { filters: { application: string } } | null) => (
      <QueryClientProvider client={client}>
        <MailsListView
          token="t"
          onLogout={vi.fn()}
          filterRequest={filterRequest}
          renderSelection={(selection) => {
            seen.selection = selection;
            return null;
          }}
        />
      </QueryClientProvider>
    );
    const user = userEvent.setup();
    const { rerender } = render(view(null));
    await screen.findByText('one');
    await user.click(screen.getByRole('checkbox', { name: 'Select all on this page' }));
    act(() => seen.selection!.selectAllMatching());
    expect(seen.selection!.matching).not.toBeNull();
    rerender(view({ filters: { application: '7' } }));
    await waitFor(() => expect(seen.selection!.matching).toBeNull());
    expect(seen.selection!.count).toBe(0);
  });
});
