/** The list view with a live stream served by MSW as it arrives (a ReadableStream the test writes to). */
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestQueryClient, handleMailList } from '../../../test/app-harness';
import { buildMail, buildMailList } from '../../../test/factories';
import { server } from '../../../test/server';
import { MailsListView } from '../components/mails-list-view';

const TOKEN = 'live-token';
/** A busy two-core machine renders slowly: wait longer than Testing Library's 1 s default. */

interface Connection {
  headers: Headers;
  send(event: string, data: unknown, id: string): void;
  end(): void;
}

function handleEvents(): Connection[] {
  const connections: Connection[] = [];
  const encoder = new TextEncoder();
  server.use(
    http.get('/api/v1/events', ({ request }) => {
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          controller = c;
        },
      });
      connections.push({
        headers: request.headers,
        send: (event, data, id) => controller.enqueue(encoder.encode(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`)),
        end: () => controller.close(),
      });
      return new HttpResponse(body, { headers: { 'Content-Type': 'text/event-stream' } });
    }),
  );
  return connections;
}

function renderView() {
  const user = userEvent.setup();
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <MailsListView token={TOKEN} onLogout={vi.fn()} />
    </QueryClientProvider>,
  );
  return user;
}

const rowOf = (id: number) => document.querySelector<HTMLElement>(`#mails-grid tr[data-mail-id="${id}"]`)!;
const change = (id: number, status: number | null, extra: Record<string, unknown> = {}) => ({
  id,
  status,
  lastUpdate: '2026-11-23T14:00:00.000Z',
  providerSentDate: status === 3 ? '2026-11-23T14:00:00.000Z' : null,
  receivedDate: '2026-11-23T13:59:00.000Z',
  isNew: false,
  ...extra,
});

afterEach(() => {
  Reflect.deleteProperty(document, 'visibilityState');
});

describe('live updates in the list view', () => {
  it('reads the stream with the token header, updates a row in place (Processing → ProviderSent brings Delete) and the counts, without reloading', async () => {
    const connections = handleEvents();
    const urls = handleMailList(
      buildMailList([buildMail({ id: 1, status: 2, providerSentDate: null }), buildMail({ id: 2, status: 0 })], {
        total: 2,
        counts: { '0': 1, '2': 1 },
      }),
    );
    const user = renderView();
    await waitFor(() => expect(rowOf(1)).toBeTruthy());
    await waitFor(() => expect(connections).toHaveLength(1));
    expect(connections[0]!.headers.get('authorization')).toBe(`Token ${TOKEN}`);
    expect(connections[0]!.headers.get('accept')).toBe('text/event-stream');
    expect(within(rowOf(1)).queryByRole('button')).toBeNull();

    // Keyboard focus on the other row stays there through the update.
    rowOf(2).focus();
    await user.keyboard(' '); // select it
    connections[0]!.send('mail', { mails: [change(1, 3)] }, 'e.1');
    connections[0]!.send('counts', { counts: { '0': 1, '1': 0, '2': 0, '3': 4, '4': 0, '5': 0 } }, 'e.1');
    await waitFor(() => expect(within(rowOf(1)).getByRole('button', { name: 'Delete mail #1' })).toBeInTheDocument());
    expect(within(rowOf(1)).getByText('ProviderSent')).toBeInTheDocument();
    await waitFor(() => expect(screen.getByTestId('footer-total')).toHaveTextContent('total: 5'));
    expect(document.activeElement).toBe(rowOf(2));
    expect(rowOf(2)).toHaveAttribute('aria-selected', 'true');
    expect(urls).toHaveLength(1);
  });

  it('counts new mails of the view in a "N new — show" button instead of inserting rows; the button loads page 1 again', async () => {
    const connections = handleEvents();
    const urls = handleMailList(buildMailList([buildMail({ id: 1, status: 3 })]));
    const user = renderView();
    await waitFor(() => expect(connections).toHaveLength(1));
    await waitFor(() => expect(rowOf(1)).toBeTruthy());
    connections[0]!.send('mail', { mails: [change(7, 0, { isNew: true }), change(8, 2, { isNew: true }), change(1, 3)] }, 'e.1');
    const button = await screen.findByRole('button', { name: '2 new — show' });
    connections[0]!.send('mail', { mails: [change(8, 3), change(9, 0, { isNew: true })] }, 'e.2');
    await screen.findByRole('button', { name: '3 new — show' });
    expect(document.querySelectorAll('#mails-grid tbody tr[data-mail-id]')).toHaveLength(1);
    await user.click(screen.getByRole('button', { name: '3 new — show' }));
    await waitFor(() => expect(urls).toHaveLength(2));
    expect(button).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /new — show/ })).toBeNull();
  });

  it('says so while the stream is down and reconnects with Last-Event-ID', async () => {
    const connections = handleEvents();
    handleMailList(buildMailList([buildMail({ id: 1 })], { counts: { '0': 1, '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 } }));
    renderView();
    await waitFor(() => expect(connections).toHaveLength(1));
    connections[0]!.send('counts', { counts: { '0': 0, '1': 0, '2': 0, '3': 2, '4': 0, '5': 0 } }, 'abc.41');
    // The event was read (its id is the one to resume from) once the view shows its counts.
    await waitFor(() => expect(screen.getByTestId('footer-total')).toHaveTextContent('total: 2'));
    connections[0]!.end();
    expect(await screen.findByText('Live updates paused — reconnecting…')).toBeInTheDocument();
    expect(screen.getByText('Live updates paused — reconnecting…').closest('[role="status"]')).not.toBeNull();
    await waitFor(() => expect(connections).toHaveLength(2));
    expect(connections[1]!.headers.get('last-event-id')).toBe('abc.41');
    await waitFor(() => expect(screen.queryByText('Live updates paused — reconnecting…')).toBeNull());
  });

  it('counts new failures in the tab title while the tab is hidden, and drops the count when it is shown', async () => {
    const connections = handleEvents();
    handleMailList(buildMailList([buildMail({ id: 1 })]));
    document.title = 'Outbox console';
    renderView();
    await waitFor(() => expect(connections).toHaveLength(1));
    const base = document.title;
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    document.dispatchEvent(new Event('visibilitychange'));
    connections[0]!.send('mail', { mails: [change(5, 4), change(6, 5), change(7, 3)] }, 'e.1');
    await waitFor(() => expect(document.title).toBe(`(2) ${base}`));
    connections[0]!.send('mail', { mails: [change(5, 4), change(8, 4)] }, 'e.2');
    await waitFor(() => expect(document.title).toBe(`(3) ${base}`));
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' });
    document.dispatchEvent(new Event('visibilitychange'));
    expect(document.title).toBe(base);
  });
});
