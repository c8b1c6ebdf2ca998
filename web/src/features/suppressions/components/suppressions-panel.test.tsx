import type { BounceReport, Suppression } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { server } from '../../../test/server';
import { SuppressionsButton } from './suppressions-button';
import { localToInstant } from './add-suppression-form';

const TOKEN = 'suppr-token';
/** A busy two-core machine renders slowly: wait longer than Testing Library's 1 s default. */

function entry(address: string, overrides: Partial<Suppression> = {}): Suppression {
  return {
    address,
    reason: 'hard_bounce',
    mailId: 12,
    detail: '550 5.1.1 user unknown',
    note: null,
    createdBy: 'bounce',
    createdAt: '2026-11-25T10:00:00.000Z',
    expiresAt: null,
    ...overrides,
  };
}

interface Call {
  method: string;
  url: URL;
  contentType: string | null;
  auth: string | null;
  body: string;
}

/**
 * A small suppression list behind MSW that behaves like the route (contract/src/suppressions.ts): newest first,
 * `q` an address substring, pages of `limit` with an opaque cursor, add/refresh, remove (404 when absent), CSV
 * import of address,note lines and the CSV export. Every call is recorded.
 */
function serveSuppressions(initial: Suppression[]) {
  let list = [...initial];
  const calls: Call[] = [];
  const record = async (request: Request) => {
    const call = {
      method: request.method,
      url: new URL(request.url),
      contentType: request.headers.get('content-type'),
      auth: request.headers.get('authorization'),
      body: await request.text(),
    };
    calls.push(call);
    return call;
  };
  server.use(
    http.get('/api/v1/suppressions', async ({ request }) => {
      const { url } = await record(request);
      const q = (url.searchParams.get('q') ?? '').toLowerCase();
      const matching = list.filter((s) => s.address.includes(q));
      if (url.searchParams.get('format') === 'csv') {
        const csv = `address,reason\r\n${matching.map((s) => `${s.address},${s.reason}`).join('\r\n')}\r\n`;
        return new HttpResponse(csv, { headers: { 'content-type': 'text/csv' } });
      }
      const limit = Number(url.searchParams.get('limit') ?? 100);
      const start = Number(url.searchParams.get('cursor') ?? 0);
      const page = matching.slice(start, start + limit);
      return HttpResponse.json({ data: page, meta: { nextCursor: start + limit < matching.length ? String(start + limit) : null } });
    }),
    http.post('/api/v1/suppressions', async ({ request }) => {
      const body = JSON.parse((await record(request)).body) as { address: string; note?: string; expiresAt?: string };
      if (body.expiresAt !== undefined && Date.parse(body.expiresAt) <= Date.now()) {
        const message = 'expiresAt is in the past; give a future instant or leave it out.';
        return HttpResponse.json({ error: { code: 'invalid_expires_at', message } }, { status: 400 });
      }
      const added = entry(body.address, {
        reason: 'manual',
        mailId: null,
        detail: null,
        note: body.note ?? null,
        createdBy: 'operator:kim',
        expiresAt: body.expiresAt ?? null,
      });
      list = [added, ...list.filter((s) => s.address !== body.address)];
      return HttpResponse.json(added, { status: 201 });
    }),
    http.delete('/api/v1/suppressions/:address', async ({ request, params }) => {
      await record(request);
      const address = String(params.address);
      if (!list.some((s) => s.address === address)) {
        return HttpResponse.json(
          { error: { code: 'suppression_not_found', message: `${address} is not on the suppression list.` } },
          { status: 404 },
        );
      }
      list = list.filter((s) => s.address !== address);
      return new HttpResponse(null, { status: 204 });
    }),
    http.post('/api/v1/suppressions/import', async ({ request }) => {
      const { body } = await record(request);
      const lines = body.split(/\r?\n/).filter((line) => line !== '');
      const refused: { line: number; address: string; reason: string }[] = [];
      let added = 0;
      lines.forEach((line, index) => {
        const [address = '', note = ''] = line.split(',');
        if (!address.includes('@')) refused.push({ line: index + 1, address, reason: 'address must be an email address' });
        else {
          added += 1;
          list = [entry(address, { reason: 'manual', note: note || null, createdBy: 'operator:kim', mailId: null, detail: null }), ...list];
        }
      });
      return HttpResponse.json({ added, updated: 0, refused });
    }),
  );
  return { calls, current: () => list };
}

function renderButton() {
  const user = userEvent.setup();
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <SuppressionsButton token={TOKEN} />
    </QueryClientProvider>,
  );
  return user;
}

async function openPanel(user: ReturnType<typeof userEvent.setup>) {
  await user.click(screen.getByRole('button', { name: 'Suppressions' }));
  return screen.getByRole('dialog', { name: 'Suppressions' });
}

const rowsOf = (dialog: HTMLElement) =>
  Array.from(within(dialog).getByRole('region', { name: 'Suppressed addresses' }).querySelectorAll('tbody tr')) as HTMLTableRowElement[];
const addresses = (dialog: HTMLElement) => rowsOf(dialog).map((row) => row.cells[0]!.textContent);
/** The row of one address. Found by its first cell: a role query with a name over 60 rows is slow in jsdom. */
const rowOf = (dialog: HTMLElement, address: string) => rowsOf(dialog).find((row) => row.cells[0]!.textContent === address)!;

describe('Suppressions panel', () => {
  // 61 rows in jsdom take seconds on a loaded two-core machine: a generous deadline, not a fast one.
  it(
    'lists the entries with reason, source mail, note, who added them and expiry; searches by address; pages with Load more',
    { timeout: 60_000 },
    async () => {
      const many = Array.from({ length: 60 }, (_, i) => entry(`user${String(i).padStart(2, '0')}@example.net`));
      serveSuppressions([
        entry('manual@example.org', {
          reason: 'manual',
          mailId: null,
          detail: null,
          note: 'asked by support',
          createdBy: 'operator:kim',
          expiresAt: '2027-01-01T00:00:00.000Z',
        }),
        ...many,
      ]);
      const user = renderButton();
      const dialog = await openPanel(user);
      expect(within(dialog).getByRole('tab', { name: 'Suppressed addresses' })).toHaveAttribute('aria-selected', 'true');
      // The search field has the focus when the panel opens.
      expect(within(dialog).getByLabelText('Search addresses')).toHaveFocus();

      await waitFor(() => expect(addresses(dialog)).toHaveLength(50));
      const first = rowOf(dialog, 'manual@example.org');
      expect(first).toHaveTextContent('Added by hand');
      expect(first).toHaveTextContent('asked by support');
      expect(first).toHaveTextContent('by kim');
      // Added and expires: local time shown, the exact UTC instant on hover.
      expect(
        within(first)
          .getAllByRole('time')
          .map((time) => time.getAttribute('title')),
      ).toEqual(['2026-11-25T10:00:00.000Z', '2027-01-01T00:00:00.000Z']);
      const bounced = rowOf(dialog, 'user00@example.net');
      expect(bounced).toHaveTextContent('Hard bounce');
      expect(bounced).toHaveTextContent('550 5.1.1 user unknown');
      expect(bounced).toHaveTextContent('#12');
      expect(bounced).toHaveTextContent('never');

      await user.click(within(dialog).getByRole('button', { name: 'Load more' }));
      await waitFor(() => expect(addresses(dialog)).toHaveLength(61));
      expect(within(dialog).queryByRole('button', { name: 'Load more' })).not.toBeInTheDocument();

      await user.type(within(dialog).getByLabelText('Search addresses'), 'user5');
      await waitFor(() => expect(addresses(dialog)).toEqual([...Array(10).keys()].map((i) => `user5${i}@example.net`)));
      await user.clear(within(dialog).getByLabelText('Search addresses'));
      await user.type(within(dialog).getByLabelText('Search addresses'), 'nobody');
      expect(await within(dialog).findByText('No suppressed address matches this search.')).toBeInTheDocument();
    },
  );

  it('adds an address with a note and an expiry; a refused one shows the server’s sentence naming the field', async () => {
    const { calls } = serveSuppressions([]);
    const user = renderButton();
    const dialog = await openPanel(user);
    expect(await within(dialog).findByText('No suppressed addresses.')).toBeInTheDocument();

    await user.click(within(dialog).getByRole('button', { name: 'Add address' }));
    const form = within(dialog).getByRole('form', { name: 'Add an address' });
    expect(within(form).getByLabelText('Address')).toHaveFocus();
    await user.type(within(form).getByLabelText('Address'), ' Jo@Example.net ');
    await user.type(within(form).getByLabelText('Note (optional)'), 'left the company');
    await user.type(within(form).getByLabelText('Expires (optional)'), '2020-03-01T09:30');
    await user.click(within(form).getByRole('button', { name: 'Add to the list' }));
    expect(await within(form).findByRole('alert')).toHaveTextContent('expiresAt is in the past; give a future instant or leave it out.');

    await user.clear(within(form).getByLabelText('Expires (optional)'));
    await user.type(within(form).getByLabelText('Expires (optional)'), '2027-03-01T09:30');
    await user.click(within(form).getByRole('button', { name: 'Add to the list' }));

    await waitFor(() => expect(within(dialog).getByRole('status')).toHaveTextContent('Jo@Example.net added to the suppression list.'));
    const post = calls.filter((c) => c.method === 'POST').at(-1)!;
    expect(post.contentType).toBe('application/json');
    expect(post.auth).toBe(`Token ${TOKEN}`);
    expect(JSON.parse(post.body)).toEqual({
      address: 'Jo@Example.net',
      note: 'left the company',
      expiresAt: new Date('2027-03-01T09:30').toISOString(),
    });
    expect(within(dialog).queryByRole('form', { name: 'Add an address' })).not.toBeInTheDocument();
    await waitFor(() => expect(addresses(dialog)).toEqual(['Jo@Example.net']));
  });

  it('removes an address only after the confirmation in its row; Keep leaves it', async () => {
    const { calls, current } = serveSuppressions([entry('a@example.net'), entry('b+tag@example.net')]);
    const user = renderButton();
    const dialog = await openPanel(user);
    await waitFor(() => expect(addresses(dialog)).toHaveLength(2));

    await user.click(within(dialog).getByRole('button', { name: 'Remove a@example.net' }));
    await user.click(within(dialog).getByRole('button', { name: 'Keep' }));
    expect(calls.some((c) => c.method === 'DELETE')).toBe(false);

    await user.click(within(dialog).getByRole('button', { name: 'Remove b+tag@example.net' }));
    const row = rowOf(dialog, 'b+tag@example.net');
    expect(row).toHaveTextContent('Send to it again?');
    await user.click(within(row).getByRole('button', { name: 'Remove' }));
    await waitFor(() => expect(addresses(dialog)).toEqual(['a@example.net']));
    expect(within(dialog).getByRole('status')).toHaveTextContent('b+tag@example.net removed: mail to it is sent again.');
    // The address is URL-encoded in the path, as the route reads it.
    expect(calls.find((c) => c.method === 'DELETE')!.url.pathname).toBe('/api/v1/suppressions/b%2Btag%40example.net');
    expect(current().map((s) => s.address)).toEqual(['a@example.net']);
  });

  it('a removal the server refuses (already gone) says so', async () => {
    serveSuppressions([entry('a@example.net')]);
    const user = renderButton();
    const dialog = await openPanel(user);
    await waitFor(() => expect(addresses(dialog)).toHaveLength(1));
    // Someone else removed it meanwhile.
    server.use(
      http.delete('/api/v1/suppressions/:address', () =>
        HttpResponse.json(
          { error: { code: 'suppression_not_found', message: 'a@example.net is not on the suppression list.' } },
          { status: 404 },
        ),
      ),
    );
    await user.click(within(dialog).getByRole('button', { name: 'Remove a@example.net' }));
    await user.click(within(dialog).getByRole('button', { name: 'Remove' }));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('a@example.net is not on the suppression list.');
  });

  it('imports a CSV file as text/csv and lists the lines it refused; exports the search as CSV with the token in the header only', async () => {
    const { calls } = serveSuppressions([entry('old@example.net')]);
    const user = renderButton();
    const dialog = await openPanel(user);
    await waitFor(() => expect(addresses(dialog)).toHaveLength(1));

    const content = 'new1@example.net,from the CRM\r\nbroken line\r\nnew2@example.net,\r\n';
    const file = new File([content], 'list.csv', { type: 'text/csv' });
    // jsdom's Blob has no text() (browsers do; the e2e spec imports a real file in Chromium).
    Object.assign(file, { text: () => Promise.resolve(content) });
    await user.upload(within(dialog).getByLabelText('CSV file to import'), file);
    await waitFor(() => expect(within(dialog).getByRole('status')).toHaveTextContent('Import done: 2 added, 0 updated, 1 refused.'));
    expect(within(dialog).getByRole('list', { name: 'Refused lines' })).toHaveTextContent(
      'Line 2: broken line — address must be an email address',
    );
    const post = calls.find((c) => c.url.pathname === '/api/v1/suppressions/import')!;
    expect(post.contentType).toBe('text/csv');
    expect(post.body).toBe('new1@example.net,from the CRM\r\nbroken line\r\nnew2@example.net,\r\n');
    await waitFor(() => expect(addresses(dialog)).toHaveLength(3));

    await user.type(within(dialog).getByLabelText('Search addresses'), 'new');
    await waitFor(() => expect(addresses(dialog)).toHaveLength(2));
    const createObjectURL = vi.fn((_blob: Blob) => 'blob:suppressions');
    Object.assign(URL, { createObjectURL, revokeObjectURL: vi.fn() });
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => undefined);
    await user.click(within(dialog).getByRole('button', { name: 'Download CSV' }));
    await waitFor(() => expect(click).toHaveBeenCalled());
    const exported = calls.at(-1)!;
    expect(exported.url.searchParams.get('format')).toBe('csv');
    expect(exported.url.searchParams.get('q')).toBe('new');
    expect(exported.url.toString()).not.toContain(TOKEN);
    expect(exported.auth).toBe(`Token ${TOKEN}`);
    expect(await createObjectURL.mock.calls[0]![0].text()).toBe('address,reason\r\nnew2@example.net,manual\r\nnew1@example.net,manual\r\n');
    click.mockRestore();
  });

  it('the second tab lists the bounce reports no mail was found for; arrows move between the tabs; Esc closes', async () => {
    serveSuppressions([]);
    const report: BounceReport = {
      id: 5,
      receivedAt: '2026-11-25T11:00:00.000Z',
      envelopeFrom: '',
      envelopeTo: 'b-999-abcdefghij@bounce.test',
      kind: 'dsn',
      mailId: null,
      matchedBy: null,
      size: 1800,
      summary: {
        subject: 'Undelivered Mail Returned to Sender',
        recipients: [{ recipient: 'who@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 unknown' }],
        feedback: null,
        originalMessageId: '<lost@elsewhere.test>',
        problem: null,
        applied: [],
      },
    };
    const bounceUrls: URL[] = [];
    server.use(
      http.get('/api/v1/bounces', ({ request }) => {
        bounceUrls.push(new URL(request.url));
        return HttpResponse.json({ data: [report], meta: { nextCursor: null } });
      }),
    );
    const user = renderButton();
    const dialog = await openPanel(user);
    const addressesTab = within(dialog).getByRole('tab', { name: 'Suppressed addresses' });
    addressesTab.focus();
    await user.keyboard('{ArrowRight}');
    const reportsTab = within(dialog).getByRole('tab', { name: 'Unmatched reports' });
    expect(reportsTab).toHaveFocus();
    expect(reportsTab).toHaveAttribute('aria-selected', 'true');
    expect(within(dialog).getByRole('tabpanel')).toHaveAccessibleName('Unmatched reports');
    const region = await within(dialog).findByRole('region', { name: 'Unmatched bounce reports' });
    const row = await within(region).findByRole('row', { name: /b-999-abcdefghij@bounce\.test/ });
    expect(row).toHaveTextContent('Delivery report');
    expect(row).toHaveTextContent('who@example.net 5.1.1 failed');
    expect(row).toHaveTextContent('<lost@elsewhere.test>');
    expect(bounceUrls[0]!.searchParams.get('matched')).toBe('false');

    await user.keyboard('{ArrowLeft}');
    expect(addressesTab).toHaveFocus();
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Suppressions' })).toHaveFocus();
  });

  it('reads a local date and time as the instant it names', () => {
    expect(localToInstant('')).toBe('');
    expect(localToInstant('2027-03-01T09:30')).toBe(new Date(2027, 2, 1, 9, 30).toISOString());
  });
});
