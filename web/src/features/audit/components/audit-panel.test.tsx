import type { AuditEntry } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { server } from '../../../test/server';
import { AuditButton } from './audit-button';

function entry(id: number, overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    id,
    at: '2026-11-23T13:00:00.000Z',
    actor: 'operator:kim',
    action: 'login',
    target: null,
    before: null,
    after: null,
    ...overrides,
  };
}

const bulkEntry = entry(9, {
  action: 'mail.bulk.dequeue',
  target: '6 mails',
  before: { ids: [1, 2, 3, 4, 5, 6] },
  after: { done: 4, skipped: [{ reason: 'processing', count: 2, ids: [5, 6] }] },
});
const filterEntry = entry(8, {
  action: 'mail.bulk.requeue',
  target: 'filter',
  before: { filter: { status: '4,5' }, expectedCount: 120 },
  after: { done: 120, skipped: [] },
});
const dequeueEntry = entry(7, { action: 'mail.dequeue', target: 'mail:42', before: { status: 'Queued' }, after: { status: 'Dequeued' } });

function serveAudit() {
  const urls: URL[] = [];
  const auth: (string | null)[] = [];
  server.use(
    http.get('/api/v1/audit', ({ request }) => {
      const url = new URL(request.url);
      urls.push(url);
      auth.push(request.headers.get('authorization'));
      if (url.searchParams.get('format') === 'csv')
        return new HttpResponse('id,at\r\n9,x\r\n', { headers: { 'content-type': 'text/csv' } });
      if (url.searchParams.get('cursor') === 'page2')
        return HttpResponse.json({
          data: [entry(1, { actor: 'client:10.0.0.7', action: 'login.failed', target: 'operator:eve' })],
          meta: { nextCursor: null },
        });
      return HttpResponse.json({ data: [bulkEntry, filterEntry, dequeueEntry], meta: { nextCursor: 'page2' } });
    }),
  );
  return { urls, auth };
}

function renderButton() {
  const user = userEvent.setup();
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <AuditButton token="audit-token" />
    </QueryClientProvider>,
  );
  return user;
}

describe('audit log panel', () => {
  it('lists who did what, when, to which mails, with the outcome; pages by keyset; Esc closes it', async () => {
    const { urls, auth } = serveAudit();
    const user = renderButton();
    await user.click(screen.getByRole('button', { name: 'Audit log' }));
    const dialog = screen.getByRole('dialog', { name: 'Audit log' });
    expect(dialog).toHaveAttribute('aria-modal', 'true');
    const rows = async () =>
      (await within(dialog).findAllByRole('row')).slice(1).map((row) =>
        within(row)
          .getAllByRole('cell')
          .slice(1)
          .map((c) => c.textContent),
      );
    await within(dialog).findByText('mail.bulk.dequeue');
    expect(await rows()).toEqual([
      ['kim', 'mail.bulk.dequeue', '6 mails: #1, #2, #3, #4, #5 …', '4 done · 2 skipped (processing 2)'],
      ['kim', 'mail.bulk.requeue', 'filter status=4,5 (saw 120)', '120 done'],
      ['kim', 'mail.dequeue', '#42', 'Queued → Dequeued'],
    ]);
    expect(urls[0]!.searchParams.get('limit')).toBe('50');
    expect(auth[0]).toBe('Token audit-token');

    await user.click(within(dialog).getByRole('button', { name: 'Load more' }));
    await within(dialog).findByText('login.failed');
    expect(urls.at(-1)!.searchParams.get('cursor')).toBe('page2');
    expect((await rows()).at(-1)).toEqual(['client:10.0.0.7', 'login.failed', 'operator:eve', 'refused']);
    expect(within(dialog).queryByRole('button', { name: 'Load more' })).toBeNull();

    await user.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(screen.getByRole('button', { name: 'Audit log' })).toHaveFocus();
  });

  it('filters by operator, action and day, and downloads the CSV with the token in the header, not the URL', async () => {
    const { urls, auth } = serveAudit();
    const user = renderButton();
    await user.click(screen.getByRole('button', { name: 'Audit log' }));
    const dialog = screen.getByRole('dialog', { name: 'Audit log' });
    await user.type(within(dialog).getByLabelText('Operator'), 'kim');
    await user.selectOptions(within(dialog).getByLabelText('Action'), 'mail.bulk');
    await waitFor(() => expect(urls.at(-1)!.searchParams.get('action')).toBe('mail.bulk'));
    expect(urls.at(-1)!.searchParams.get('operator')).toBe('kim');

    const createObjectURL = vi.fn((_blob: Blob) => 'blob:audit');
    const revokeObjectURL = vi.fn();
    Object.assign(URL, { createObjectURL, revokeObjectURL });
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => undefined);
    await user.click(within(dialog).getByRole('button', { name: 'Download CSV' }));
    await waitFor(() => expect(click).toHaveBeenCalled());
    const csvCall = urls.at(-1)!;
    expect(csvCall.searchParams.get('format')).toBe('csv');
    expect(csvCall.searchParams.get('action')).toBe('mail.bulk');
    expect(csvCall.toString()).not.toContain('audit-token');
    expect(auth.at(-1)).toBe('Token audit-token');
    expect(createObjectURL).toHaveBeenCalledTimes(1);
    expect(await createObjectURL.mock.calls[0]![0].text()).toBe('id,at\r\n9,x\r\n');
    click.mockRestore();
  });
});
