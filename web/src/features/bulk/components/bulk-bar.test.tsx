import type { BulkResult } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { server } from '../../../test/server';
import { BulkBar, type BulkSelection } from './bulk-bar';

function selectionOf(overrides: Partial<BulkSelection> = {}): BulkSelection {
  return {
    mails: [
      { id: 1, status: 0 },
      { id: 2, status: 0 },
      { id: 3, status: 2 },
    ],
    matching: null,
    count: 3,
    canSelectAllMatching: false,
    total: 3,
    selectAllMatching: vi.fn(),
    clear: vi.fn(),
    ...overrides,
  };
}

/** Answers the bulk call: the dry run with `preview`, the real call with `result`; records every body. */
function handleBulk(preview: BulkResult, result: BulkResult | Response) {
  const bodies: Record<string, unknown>[] = [];
  server.use(
    http.post('/api/v1/mail/bulk', async ({ request }) => {
      const body = (await request.json()) as Record<string, unknown>;
      bodies.push(body);
      if (body.dryRun === true) return HttpResponse.json({ data: [preview] });
      return result instanceof Response ? result : HttpResponse.json({ data: [result] });
    }),
  );
  return bodies;
}

function renderBar(selection: BulkSelection, onActed = vi.fn()) {
  const user = userEvent.setup();
  const view = render(
    <QueryClientProvider client={createTestQueryClient()}>
      <BulkBar token="t" selection={selection} onActed={onActed} />
    </QueryClientProvider>,
  );
  return { user, onActed, ...view };
}

describe('bulk bar', () => {
  it('offers the actions the selection allows, confirms with the dry run, then reports the outcome', async () => {
    const bodies = handleBulk(
      {
        action: 'dequeue',
        done: 2,
        dryRun: true,
        moving: [{ reason: 'queued', count: 2 }],
        skipped: [{ reason: 'processing', count: 1, ids: [3] }],
      },
      { action: 'dequeue', done: 1, skipped: [{ reason: 'processing', count: 2, ids: [2, 3] }] },
    );
    const selection = selectionOf();
    const { user, onActed, rerender } = renderBar(selection);
    const bar = screen.getByRole('toolbar', { name: 'Selected mails' });
    expect(within(bar).getByText('3 mails selected')).toBeInTheDocument();
    expect(within(bar).queryByRole('button', { name: 'Delete…' })).toBeNull();
    await user.click(within(bar).getByRole('button', { name: 'Dequeue…' }));

    const dialog = await screen.findByRole('dialog', { name: 'Dequeue 3 mails?' });
    expect(dialog).toHaveAttribute('aria-modal', 'true');
    expect(await within(dialog).findByText('Will dequeue: 2 mails (2 Queued)')).toBeInTheDocument();
    expect(within(dialog).getByText('Will skip: 1 mail (already Processing)')).toBeInTheDocument();
    expect(bodies[0]).toEqual({ action: 'dequeue', ids: [1, 2, 3], dryRun: true });
    // Focus starts on Cancel; Tab stays inside the dialog.
    expect(within(dialog).getByRole('button', { name: 'Cancel' })).toHaveFocus();
    await user.tab();
    expect(within(dialog).getByRole('button', { name: 'Dequeue 2 mails' })).toHaveFocus();
    await user.tab();
    expect(within(dialog).getByRole('button', { name: 'Cancel' })).toHaveFocus();

    await user.click(within(dialog).getByRole('button', { name: 'Dequeue 2 mails' }));
    await waitFor(() => expect(onActed).toHaveBeenCalledTimes(1));
    expect(bodies[1]).toEqual({ action: 'dequeue', ids: [1, 2, 3] });
    expect(screen.queryByRole('dialog')).toBeNull();
    // The list view clears the selection after onActed: the outcome line says what happened.
    rerender(
      <QueryClientProvider client={createTestQueryClient()}>
        <BulkBar token="t" selection={selectionOf({ mails: [], count: 0 })} onActed={onActed} />
      </QueryClientProvider>,
    );
    expect(screen.getByRole('status')).toHaveTextContent('1 dequeued · 2 skipped: already Processing');
  });

  it('acts on the whole filter with expectedCount after "Select all N matching", and explains a 409', async () => {
    const bodies = handleBulk(
      { action: 'requeue', done: 120, dryRun: true, moving: [{ reason: 'provider_error', count: 120 }], skipped: [] },
      HttpResponse.json({ error: { code: 'count_changed', message: 'more' } }, { status: 409 }),
    );
    const onlyPage = selectionOf({
      mails: [{ id: 9, status: 4 }],
      count: 1,
      canSelectAllMatching: true,
      total: 120,
    });
    const { user, rerender, onActed } = renderBar(onlyPage);
    await user.click(screen.getByRole('button', { name: 'Select all 120 matching' }));
    expect(onlyPage.selectAllMatching).toHaveBeenCalled();
    rerender(
      <QueryClientProvider client={createTestQueryClient()}>
        <BulkBar
          token="t"
          selection={selectionOf({
            mails: [{ id: 9, status: 4 }],
            matching: { filter: { status: '4' }, total: 120, statuses: [4] },
            count: 120,
            total: 120,
          })}
          onActed={onActed}
        />
      </QueryClientProvider>,
    );
    expect(screen.getByText('All 120 mails matching selected')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Requeue…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Requeue 120 mails?' });
    await user.click(await within(dialog).findByRole('button', { name: 'Requeue 120 mails' }));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('The filter now matches far more mails than the 120 you selected');
    expect(bodies).toEqual([
      { action: 'requeue', filter: { status: '4' }, expectedCount: 120, dryRun: true },
      { action: 'requeue', filter: { status: '4' }, expectedCount: 120 },
    ]);
    // The list reloads (its count is out of date) and the selection clears; the dialog stays to say why.
    expect(onActed).toHaveBeenCalledTimes(1);
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('Esc cancels the confirmation without acting', async () => {
    const bodies = handleBulk(
      { action: 'delete', done: 1, dryRun: true, moving: [{ reason: 'provider_sent', count: 1 }], skipped: [] },
      {
        action: 'delete',
        done: 1,
        skipped: [],
      },
    );
    const { user, onActed } = renderBar(selectionOf({ mails: [{ id: 5, status: 3 }], count: 1 }));
    await user.click(screen.getByRole('button', { name: 'Delete…' }));
    await screen.findByText('Will delete: 1 mail (1 ProviderSent)');
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(bodies).toHaveLength(1);
    expect(onActed).not.toHaveBeenCalled();
    expect(screen.getByRole('button', { name: 'Delete…' })).toHaveFocus();
  });
});
