/* One file (over 250 lines) for the list view's component tests: they share the MSW list handler and row helpers below. */
import type { Mail, MailDetail, MailListResponse } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildMail, buildMailList } from '../../../test/factories';
import { server } from '../../../test/server';
import { mailKeys } from '../api/list-mails';
import { MailsListView } from './mails-list-view';

const TOKEN = 'list-token';

function renderView(onLogout = vi.fn()) {
  const user = userEvent.setup();
  const queryClient = createTestQueryClient();
  render(
    <QueryClientProvider client={queryClient}>
      <MailsListView token={TOKEN} onLogout={onLogout} />
    </QueryClientProvider>,
  );
  return { user, queryClient, onLogout };
}

/** Serves the list; `respond` may look at the URL. Records every list request URL. */
function handleList(respond: (url: URL) => MailListResponse | Response) {
  const urls: URL[] = [];
  const headers: Headers[] = [];
  server.use(
    http.get('/api/v1/mail/list', ({ request }) => {
      const url = new URL(request.url);
      urls.push(url);
      headers.push(request.headers);
      const answer = respond(url);
      return answer instanceof Response ? answer : HttpResponse.json(answer);
    }),
  );
  return { urls, headers };
}

// A row click also opens the detail drawer; these tests are about the list, so the detail answers 404.
beforeEach(() => {
  server.use(
    http.get('/api/v1/mail/:id', () => HttpResponse.json({ error: { code: 'not_found', message: 'no such mail' } }, { status: 404 })),
  );
});

function bodyRows() {
  const [, body] = screen.getAllByRole('rowgroup');
  return within(body!).getAllByRole('row');
}

function rowOf(text: string): HTMLElement {
  const row = screen.getByText(text).closest('tr');
  if (!row) throw new Error(`no row holds ${text}`);
  return row;
}

describe('mails table', () => {
  it('has the accessible name Mails and the header texts in order, the last one empty', async () => {
    handleList(() => buildMailList([buildMail()]));
    renderView();
    const table = await screen.findByRole('grid', { name: 'Mails' });
    // The selection column comes first (docs/console.md §10), then the spec's columns.
    const [select, ...headers] = within(table).getAllByRole('columnheader');
    expect(within(select!).getByRole('checkbox', { name: 'Select all on this page' })).toBeInTheDocument();
    expect(headers.map((header) => header.textContent)).toEqual([
      'From',
      'To',
      'Subject',
      'Status',
      'ProviderSentDate',
      'ReceivedDate',
      'LastUpdate',
      '',
    ]);
    expect(headers[7]).toHaveAttribute('aria-label', 'Actions');
    expect(headers[7]).not.toHaveAttribute('draggable', 'true');
    expect(within(headers[7]!).queryByRole('button')).not.toBeInTheDocument();
    expect(headers[0]).toHaveAttribute('draggable', 'true');
    // The default order is receivedDate desc; every data column sorts, To by its first recipient.
    expect(headers[5]).toHaveAttribute('aria-sort', 'descending');
    expect(headers[0]).toHaveAttribute('aria-sort', 'none');
    expect(headers[1]).toHaveAttribute('aria-sort', 'none');
    expect(headers[7]).not.toHaveAttribute('aria-sort');
    expect(screen.getByRole('heading', { name: 'MAILS LIST' })).toBeInTheDocument();
  });

  it('renders From on two lines, one To line per recipient, the subject and the dates', async () => {
    // A fixed zone with a half-hour offset, so the expectation is a literal and a UTC slip shows (Node
    // applies a changed TZ at once; restoreMocks does not undo env stubs, hence the explicit unstub).
    vi.stubEnv('TZ', 'Asia/Kolkata');
    onTestFinished(() => void vi.unstubAllEnvs());
    const mail = buildMail({
      id: 11,
      fromName: 'Alice Sender',
      fromMail: 'alice@example.com',
      to: [
        { recipientName: 'Bob', recipientMail: 'bob@example.org' },
        { recipientName: 'Carol', recipientMail: 'carol@example.org' },
      ],
      subject: 'Quarterly report',
      providerSentDate: null,
      receivedDate: '2026-11-23T13:05:09.000Z',
    });
    handleList(() => buildMailList([mail]));
    renderView();

    const row = rowOf(await screen.findByText('Quarterly report').then((el) => el.textContent ?? ''));
    const [select, ...cells] = within(row).getAllByRole('gridcell');
    expect(within(select!).getByRole('checkbox', { name: `Select mail #${mail.id}` })).not.toBeChecked();
    expect(cells).toHaveLength(8);
    expect(within(cells[0]!).getByText('Alice Sender')).toBeInTheDocument();
    expect(within(cells[0]!).getByText('alice@example.com')).toBeInTheDocument();
    expect(within(cells[1]!).getByText('Bob | bob@example.org')).toBeInTheDocument();
    expect(within(cells[1]!).getByText('Carol | carol@example.org')).toBeInTheDocument();
    expect(cells[2]).toHaveTextContent('Quarterly report');
    expect(cells[2]).toHaveAttribute('title', 'Quarterly report');
    expect(cells[4]).toHaveTextContent(/^$/);
    // Local time in the cell (the operator's zone is India's, UTC+5:30, for this test), the exact UTC instant
    // in its tooltip.
    expect(cells[5]).toHaveTextContent('2026-11-23 18:35:09');
    expect(cells[5]).toHaveAttribute('title', '2026-11-23T13:05:09.000Z');
  });

  it.each([
    [0, 'Queued', 'rgb(245, 183, 0)', 'Dequeue'],
    [1, 'Dequeued', 'rgb(245, 183, 0)', 'Delete'],
    [2, 'Processing', 'rgb(245, 183, 0)', null],
    [3, 'ProviderSent', 'rgb(46, 157, 79)', 'Delete'],
    [4, 'ProviderError', 'rgb(214, 69, 69)', 'Delete'],
    [5, 'Error', 'rgb(214, 69, 69)', 'Delete'],
  ])('status %i shows a round 30×30 %s icon and the right button', async (status, name, colour, action) => {
    handleList(() => buildMailList([buildMail({ id: 40 + status, status, subject: 'the mail' })]));
    renderView();
    const row = rowOf(await screen.findByText('the mail').then((el) => el.textContent ?? ''));
    const cells = within(row).getAllByRole('gridcell').slice(1);
    expect(cells[3]).toHaveTextContent(name);
    const icon = within(cells[3]!).getByTestId('status-icon');
    // The size and the round shape are the stylesheet's (jsdom lays nothing out): e2e/specs/cells.spec.ts
    // measures the 30×30 box in Chromium. The colour is the element's own.
    expect(icon).toHaveClass('status__icon');
    expect(icon).toHaveStyle({ backgroundColor: colour });

    const buttons = within(cells[7]!).queryAllByRole('button');
    if (action === null) {
      expect(buttons).toHaveLength(0);
    } else {
      expect(buttons).toHaveLength(1);
      expect(buttons[0]).toHaveAccessibleName(new RegExp(`^${action} mail #[0-9]+$`));
      expect(buttons[0]).toHaveTextContent(action);
    }
  });

  it('shows No data to display when the list is empty, with total 0', async () => {
    handleList(() => buildMailList([]));
    renderView();
    expect(await screen.findByText('No data to display')).toBeInTheDocument();
    expect(screen.getByText('total: 0')).toBeInTheDocument();
    expect(screen.getByText('selected: 0')).toBeInTheDocument();
    expect(screen.getByText('0 of 0')).toBeInTheDocument();
  });

  it('empties the rows silently when the list load fails', async () => {
    const alert = vi.spyOn(window, 'alert').mockImplementation(() => {});
    let fail = false;
    handleList(() => (fail ? new HttpResponse('boom', { status: 500 }) : buildMailList([buildMail({ subject: 'First load' })])));
    const { queryClient } = renderView();
    expect(await screen.findByText('First load')).toBeInTheDocument();

    fail = true;
    await queryClient.invalidateQueries();

    expect(await screen.findByText('No data to display')).toBeInTheDocument();
    expect(screen.queryByText('First load')).not.toBeInTheDocument();
    expect(alert).not.toHaveBeenCalled();
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('a network failure on the first load also shows no data and no alert', async () => {
    const alert = vi.spyOn(window, 'alert').mockImplementation(() => {});
    handleList(() => HttpResponse.error());
    renderView();
    expect(await screen.findByText('No data to display')).toBeInTheDocument();
    expect(alert).not.toHaveBeenCalled();
  });

  it('shows a lower bound as "1,000+": in the range and the total; Last is off, since the end is not known', async () => {
    const mails = Array.from({ length: 50 }, (_, i) => buildMail({ id: 1000 - i, subject: `match ${i}` }));
    handleList(() => buildMailList(mails, { total: 1000, totalIsLowerBound: true, nextCursor: 'n', lastCursor: 'l' }));
    renderView();
    await screen.findByText('match 0');
    expect(screen.getByTestId('footer-range')).toHaveTextContent('1–50 of 1,000+');
    expect(screen.getByTestId('footer-total')).toHaveTextContent('total: 1,000+');
    expect(screen.getByRole('button', { name: 'Last' })).toBeDisabled();
    expect(screen.getByRole('button', { name: 'Next' })).toBeEnabled();
  });

  it('shows total and selected in the footer; clicking rows and Space toggle the selection', async () => {
    handleList(() =>
      buildMailList([buildMail({ subject: 'one' }), buildMail({ subject: 'two' }), buildMail({ subject: 'three' })], {
        total: 1234,
      }),
    );
    const { user } = renderView();
    await screen.findByText('one');
    expect(screen.getByText('total: 1234')).toBeInTheDocument();
    expect(screen.getByText('selected: 0')).toBeInTheDocument();

    await user.click(screen.getByText('one'));
    await user.click(screen.getByText('three'));
    expect(screen.getByText('selected: 2')).toBeInTheDocument();
    expect(rowOf('one')).toHaveAttribute('aria-selected', 'true');
    expect(rowOf('two')).toHaveAttribute('aria-selected', 'false');

    await user.click(screen.getByText('one'));
    expect(screen.getByText('selected: 1')).toBeInTheDocument();

    rowOf('two').focus();
    await user.keyboard(' ');
    expect(rowOf('two')).toHaveAttribute('aria-selected', 'true');
    expect(screen.getByText('selected: 2')).toBeInTheDocument();
  });
});

describe('detail drawer loading', () => {
  it("starts loading a mail's detail when its row is pressed; the click then opens it without asking again", async () => {
    const details: string[] = [];
    server.use(
      http.get('/api/v1/mail/:id', ({ params }) => {
        details.push(String(params.id));
        const detail: MailDetail = {
          ...buildMail({ id: Number(params.id), subject: 'pressed' }),
          ...{ messageId: '<21@outbox.test>', cc: [], bcc: [], envelopeFrom: 'a@example.com', envelopeTo: [], attempts: 0 },
          ...{ nextAttemptAt: null, providerReply: null, leaseOwner: null, leaseExpiresAt: null, sizeBytes: 10 },
          ...{ headers: [], text: 'Hello', html: null, events: [], recipients: [], attachments: [] },
        };
        return HttpResponse.json({ data: [detail] });
      }),
    );
    handleList(() => buildMailList([buildMail({ id: 21, subject: 'pressed' }), buildMail({ id: 22, status: 0, subject: 'other' })]));
    const { user, queryClient } = renderView();
    // As in the console (lib/query-client.ts): an answer is fresh for 5 s (the test client's default is 0).
    queryClient.setQueryDefaults(mailKeys.details(), { staleTime: 5_000 });
    const row = rowOf(await screen.findByText('pressed').then((el) => el.textContent ?? ''));

    fireEvent.pointerDown(row, { button: 0 });
    await waitFor(() => expect(details).toEqual(['21']));
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument();

    await user.click(within(row).getByText('pressed'));
    expect(await screen.findByRole('dialog', { name: 'Mail #21' })).toBeInTheDocument();
    expect(details).toEqual(['21']);

    // A press on a row's button is an action, not an open: nothing is loaded for it.
    fireEvent.pointerDown(screen.getByRole('button', { name: 'Dequeue mail #22' }), { button: 0 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(details).toEqual(['21']);
  });
});

describe('row actions', () => {
  it('Dequeue calls GET /api/v1/mail/{id}/dequeue with the token and reloads the list', async () => {
    let status = 0;
    const { urls } = handleList(() => buildMailList([buildMail({ id: 21, status, subject: 'queued one' })]));
    const calls: { method: string; auth: string | null }[] = [];
    server.use(
      http.all('/api/v1/mail/:id/dequeue', ({ request, params }) => {
        calls.push({ method: request.method, auth: request.headers.get('authorization') });
        expect(params.id).toBe('21');
        status = 1;
        return HttpResponse.json({ data: [] });
      }),
    );
    const { user } = renderView();
    const row = rowOf(await screen.findByText('queued one').then((el) => el.textContent ?? ''));
    const loadsBefore = urls.length;

    await user.click(within(row).getByRole('button', { name: /^Dequeue mail #\d+$/ }));

    await waitFor(() => expect(urls.length).toBeGreaterThan(loadsBefore));
    expect(calls).toEqual([{ method: 'GET', auth: `Token ${TOKEN}` }]);
    expect(await within(rowOf('queued one')).findByRole('button', { name: 'Delete mail #21' })).toBeInTheDocument();
    expect(screen.getByText('selected: 0')).toBeInTheDocument();
  });

  it('Delete calls DELETE /api/v1/mail/{id} with the token and reloads the list', async () => {
    let mails: Mail[] = [buildMail({ id: 22, status: 3, subject: 'sent one' })];
    const { urls } = handleList(() => buildMailList(mails));
    const calls: { method: string; auth: string | null; contentType: string | null }[] = [];
    server.use(
      http.delete('/api/v1/mail/22', ({ request }) => {
        calls.push({
          method: request.method,
          auth: request.headers.get('authorization'),
          contentType: request.headers.get('content-type'),
        });
        mails = [];
        return HttpResponse.json({ data: [{ id: 22 }] });
      }),
    );
    const { user } = renderView();
    await screen.findByText('sent one');
    const loadsBefore = urls.length;

    await user.click(screen.getByRole('button', { name: /^Delete mail #\d+$/ }));

    expect(await screen.findByText('No data to display')).toBeInTheDocument();
    expect(urls.length).toBeGreaterThan(loadsBefore);
    expect(calls).toEqual([{ method: 'DELETE', auth: `Token ${TOKEN}`, contentType: 'application/json' }]);
  });

  it('a failing Dequeue alerts the exact text with the id and reloads the list', async () => {
    const alert = vi.spyOn(window, 'alert').mockImplementation(() => {});
    const { urls } = handleList(() => buildMailList([buildMail({ id: 31, status: 0, subject: 'stuck' })]));
    server.use(http.get('/api/v1/mail/31/dequeue', () => HttpResponse.json({}, { status: 409 })));
    const { user } = renderView();
    await screen.findByText('stuck');
    const loadsBefore = urls.length;

    await user.click(screen.getByRole('button', { name: /^Dequeue mail #\d+$/ }));

    await waitFor(() => expect(alert).toHaveBeenCalledWith('Unable to Dequeue the mail #31'));
    expect(alert).toHaveBeenCalledTimes(1);
    await waitFor(() => expect(urls.length).toBeGreaterThan(loadsBefore));
  });

  it('a failing Delete alerts the exact text with the id and reloads the list', async () => {
    const alert = vi.spyOn(window, 'alert').mockImplementation(() => {});
    const { urls } = handleList(() => buildMailList([buildMail({ id: 32, status: 5, subject: 'broken' })]));
    server.use(http.delete('/api/v1/mail/32', () => HttpResponse.error()));
    const { user } = renderView();
    await screen.findByText('broken');
    const loadsBefore = urls.length;

    await user.click(screen.getByRole('button', { name: /^Delete mail #\d+$/ }));

    await waitFor(() => expect(alert).toHaveBeenCalledWith('Unable to Delete the mail #32'));
    expect(alert).toHaveBeenCalledTimes(1);
    await waitFor(() => expect(urls.length).toBeGreaterThan(loadsBefore));
  });

  it('clicking a row button does not select the row', async () => {
    handleList(() => buildMailList([buildMail({ id: 33, status: 4, subject: 'failed' })]));
    server.use(http.delete('/api/v1/mail/33', () => HttpResponse.json({ data: [{ id: 33 }] })));
    const { user } = renderView();
    await screen.findByText('failed');
    await user.click(screen.getByRole('button', { name: /^Delete mail #\d+$/ }));
    expect(screen.getByText('selected: 0')).toBeInTheDocument();
  });
});

describe('paging and sorting', () => {
  function pageOf(pageNumber: number, total: number): MailListResponse {
    const mails = Array.from({ length: Math.min(50, total - (pageNumber - 1) * 50) }, (_, index) =>
      buildMail({ id: pageNumber * 1000 + index, subject: `p${pageNumber} mail ${index}` }),
    );
    return buildMailList(mails, {
      total,
      nextCursor: `after-${pageNumber}`,
      prevCursor: pageNumber > 1 ? `before-${pageNumber}` : null,
    });
  }

  function serveThreePages() {
    return handleList((url) => {
      const cursor = url.searchParams.get('cursor');
      if (cursor === 'after-1') return pageOf(2, 120);
      if (cursor === 'after-2') return pageOf(3, 120);
      if (cursor === 'before-3') return pageOf(2, 120);
      return pageOf(1, 120);
    });
  }

  it('asks for 50 rows sorted by receivedDate desc first, and shows 50 rows of 60 px', async () => {
    const { urls, headers } = serveThreePages();
    renderView();
    await screen.findByText('p1 mail 0');
    const first = urls[0]!;
    expect(first.searchParams.get('limit')).toBe('50');
    expect(first.searchParams.get('sort')).toBe('receivedDate');
    expect(first.searchParams.get('order')).toBe('desc');
    expect(first.searchParams.has('cursor')).toBe(false);
    expect(headers[0]!.get('authorization')).toBe(`Token ${TOKEN}`);
    expect(bodyRows()).toHaveLength(50);
    // Rows take their height from the table's --row-height (e2e/specs/list-view.spec.ts measures them in Chromium).
    expect(screen.getByRole('grid').style.getPropertyValue('--row-height')).toBe('60px');
    expect(screen.getByText('1–50 of 120')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Previous' })).toBeDisabled();
  });

  it('Next sends meta.nextCursor, Previous sends meta.prevCursor, First goes back without a cursor', async () => {
    const { urls } = serveThreePages();
    const { user } = renderView();
    await screen.findByText('p1 mail 0');

    await user.click(screen.getByRole('button', { name: 'Next' }));
    expect(await screen.findByText('p2 mail 0')).toBeInTheDocument();
    expect(urls.at(-1)!.searchParams.get('cursor')).toBe('after-1');
    expect(urls.at(-1)!.searchParams.get('limit')).toBe('50');
    expect(screen.getByText('51–100 of 120')).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'Next' }));
    expect(await screen.findByText('p3 mail 0')).toBeInTheDocument();
    expect(urls.at(-1)!.searchParams.get('cursor')).toBe('after-2');
    expect(screen.getByText('101–120 of 120')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Next' })).toBeDisabled();

    await user.click(screen.getByRole('button', { name: 'Previous' }));
    expect(await screen.findByText('p2 mail 0')).toBeInTheDocument();
    expect(urls.at(-1)!.searchParams.get('cursor')).toBe('before-3');
    expect(screen.getByText('51–100 of 120')).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'First' }));
    expect(await screen.findByText('p1 mail 0')).toBeInTheDocument();
    expect(screen.getByText('1–50 of 120')).toBeInTheDocument();
  });

  it('pages a list answered as the spec shapes it, { data } without meta, 50 rows at a time', async () => {
    const mails = Array.from({ length: 120 }, (_, i) => buildMail({ id: i + 1, subject: `whole ${i}` }));
    const { urls } = handleList(() => HttpResponse.json({ data: mails }));
    const { user } = renderView();
    await screen.findByText('whole 0');
    expect(bodyRows()).toHaveLength(50);
    expect(screen.getByText('total: 120')).toBeInTheDocument();
    expect(screen.getByText('1–50 of 120')).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'Next' }));
    expect(await screen.findByText('whole 50')).toBeInTheDocument();
    expect(bodyRows()).toHaveLength(50);
    expect(screen.getByText('51–100 of 120')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Next' }));
    expect(await screen.findByText('whole 100')).toBeInTheDocument();
    expect(bodyRows()).toHaveLength(20);
    expect(screen.getByRole('button', { name: 'Next' })).toBeDisabled();
    await user.click(screen.getByRole('button', { name: 'Previous' }));
    expect(await screen.findByText('whole 50')).toBeInTheDocument();
    expect(urls.length).toBeGreaterThanOrEqual(4);
  });

  it('clears the selection when the page changes', async () => {
    serveThreePages();
    const { user } = renderView();
    await user.click(await screen.findByText('p1 mail 3'));
    expect(screen.getByText('selected: 1')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Next' }));
    await screen.findByText('p2 mail 0');
    expect(screen.getByText('selected: 0')).toBeInTheDocument();
  });

  it('sorts on the server: a header click sends sort/order, a second flips it, and paging restarts', async () => {
    const { urls } = serveThreePages();
    const { user } = renderView();
    await screen.findByText('p1 mail 0');
    await user.click(screen.getByRole('button', { name: 'Next' }));
    await screen.findByText('p2 mail 0');

    await user.click(screen.getByRole('button', { name: 'Subject' }));
    await waitFor(() => expect(urls.at(-1)!.searchParams.get('sort')).toBe('subject'));
    expect(urls.at(-1)!.searchParams.get('order')).toBe('asc');
    expect(urls.at(-1)!.searchParams.has('cursor')).toBe(false);
    expect(await screen.findByText('1–50 of 120')).toBeInTheDocument();
    expect(screen.getByRole('columnheader', { name: 'Subject' })).toHaveAttribute('aria-sort', 'ascending');
    expect(screen.getByRole('columnheader', { name: 'ReceivedDate' })).toHaveAttribute('aria-sort', 'none');

    await user.click(screen.getByRole('button', { name: 'Subject' }));
    await waitFor(() => expect(urls.at(-1)!.searchParams.get('order')).toBe('desc'));
    expect(urls.at(-1)!.searchParams.get('sort')).toBe('subject');
    expect(screen.getByRole('columnheader', { name: 'Subject' })).toHaveAttribute('aria-sort', 'descending');

    await user.click(screen.getByRole('button', { name: 'From' }));
    await waitFor(() => expect(urls.at(-1)!.searchParams.get('sort')).toBe('from'));
    await user.click(screen.getByRole('button', { name: 'LastUpdate' }));
    await waitFor(() => expect(urls.at(-1)!.searchParams.get('sort')).toBe('lastUpdate'));
    expect(urls.at(-1)!.searchParams.get('order')).toBe('desc');
  });
});

describe('column layout', () => {
  it('moves a column with Alt+Arrow and remembers the order in localStorage, action column last', async () => {
    handleList(() => buildMailList([buildMail()]));
    const { user } = renderView();
    await screen.findByRole('grid');

    screen.getByRole('button', { name: 'From' }).focus();
    await user.keyboard('{Alt>}{ArrowRight}{/Alt}');

    const texts = screen.getAllByRole('columnheader').map((header) => header.textContent);
    expect(texts).toEqual(['', 'To', 'From', 'Subject', 'Status', 'ProviderSentDate', 'ReceivedDate', 'LastUpdate', '']);
    const stored = JSON.parse(window.localStorage.getItem('outbox.columns.v1') ?? '{}') as { order?: string[] };
    expect(stored.order?.slice(0, 2)).toEqual(['to', 'from']);
  });
});

describe('partial refusals', () => {
  it('marks a mail refused for some recipients "N of M rejected" under its status; none when all or none were refused', async () => {
    handleList(() =>
      buildMailList([
        buildMail({ subject: 'partly refused', status: 3, recipientCount: 4, rejectedRecipients: 2 }),
        buildMail({ subject: 'all refused', status: 4, recipientCount: 2, rejectedRecipients: 2 }),
        buildMail({ subject: 'all accepted', status: 3, recipientCount: 3, rejectedRecipients: 0 }),
      ]),
    );
    renderView();
    await screen.findByText('partly refused');
    const statusOf = (subject: string) => {
      const index = screen.getAllByRole('columnheader').findIndex((header) => header.textContent === 'Status');
      return (rowOf(subject) as HTMLTableRowElement).cells[index]!;
    };
    expect(statusOf('partly refused')).toHaveTextContent('ProviderSent2 of 4 rejected');
    expect(within(statusOf('partly refused')).getByTitle('ProviderSent, 2 of 4 rejected')).toBeInTheDocument();
    expect(statusOf('all refused')).toHaveTextContent(/^ProviderError$/);
    expect(statusOf('all accepted')).toHaveTextContent(/^ProviderSent$/);
  });
});

describe('scheduled sends', () => {
  it('marks a Queued mail whose sendAt is ahead "scheduled …" under its status, with the exact instant in its title', async () => {
    const ahead = new Date(Date.now() + 3 * 86_400_000);
    ahead.setSeconds(0, 0);
    handleList(() =>
      buildMailList([
        buildMail({ subject: 'scheduled', status: 0, sendAt: ahead.toISOString() }),
        buildMail({ subject: 'schedule passed', status: 0, sendAt: new Date(Date.now() - 60_000).toISOString() }),
        buildMail({ subject: 'sent as scheduled', status: 3, sendAt: ahead.toISOString() }),
      ]),
    );
    renderView();
    await screen.findByText('scheduled');
    const statusOf = (subject: string) => {
      const index = screen.getAllByRole('columnheader').findIndex((header) => header.textContent === 'Status');
      return (rowOf(subject) as HTMLTableRowElement).cells[index]!;
    };
    const pad = (n: number) => String(n).padStart(2, '0');
    const local = `${ahead.getFullYear()}-${pad(ahead.getMonth() + 1)}-${pad(ahead.getDate())} ${pad(ahead.getHours())}:${pad(ahead.getMinutes())}`;
    expect(statusOf('scheduled')).toHaveTextContent(`Queuedscheduled ${local}`);
    expect(within(statusOf('scheduled')).getByTitle(`Queued, scheduled for ${ahead.toISOString()}`)).toBeInTheDocument();
    expect(statusOf('schedule passed')).toHaveTextContent(/^Queued$/);
    expect(statusOf('sent as scheduled')).toHaveTextContent(/^ProviderSent$/);
  });
});
