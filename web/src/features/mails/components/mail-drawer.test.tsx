import type { BounceReport, MailDetail, RecipientDelivery } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildMail } from '../../../test/factories';
import { server } from '../../../test/server';
import { MailDrawer } from './mail-drawer';

const TOKEN = 'drawer-token';

function buildDetail(overrides: Partial<MailDetail> = {}): MailDetail {
  return {
    ...buildMail({ id: 7, status: 3, subject: 'Invoice' }),
    messageId: '<7@outbox.test>',
    cc: [],
    bcc: [],
    envelopeFrom: 'shop@example.com',
    envelopeTo: [],
    attempts: 1,
    nextAttemptAt: null,
    providerReply: '250 ok',
    leaseOwner: null,
    leaseExpiresAt: null,
    sizeBytes: 2048,
    headers: [{ name: 'Subject', value: 'Invoice' }],
    text: 'Hello',
    html: null,
    events: [],
    recipients: [],
    attachments: [],
    ...overrides,
  };
}

function renderDrawer(detail: MailDetail) {
  server.use(http.get('/api/v1/mail/:id', () => HttpResponse.json({ data: [detail] })));
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <MailDrawer
        token={TOKEN}
        id={detail.id}
        actions={{ onDequeue: vi.fn(), onDelete: vi.fn(), onRequeue: vi.fn(), pendingIds: new Set() }}
        onClose={vi.fn()}
      />
    </QueryClientProvider>,
  );
}

/** A busy two-core machine renders slowly: wait longer than Testing Library's 1 s default. */

const section = async (name: string) => (await screen.findByRole('heading', { name })).closest('section')!;
const rowWith = (container: HTMLElement, text: string) =>
  within(container).getByText(text, { exact: false }).closest('tr')! as HTMLTableRowElement;
const rowsOf = (container: HTMLElement) => within(container).getAllByRole('row').slice(1) as HTMLTableRowElement[];
const texts = (rows: HTMLTableRowElement[]) => rows.map((row) => Array.from(row.cells, (cell) => cell.textContent));

describe('MailDrawer', () => {
  it("shows each To/Cc/Bcc recipient's own outcome from the API, the provider's reply for a rejected one, and names the partial failure", async () => {
    const at = '2026-11-23T13:05:10.000Z';
    renderDrawer(
      buildDetail({
        to: [
          { recipientName: 'Ann', recipientMail: 'ann@example.com' },
          { recipientName: 'Bob', recipientMail: 'bob@example.com' },
        ],
        cc: [{ recipientName: '', recipientMail: 'carl@example.com' }],
        bcc: [{ recipientName: '', recipientMail: 'dora@example.com' }],
        recipientCount: 5,
        rejectedRecipients: 2,
        recipients: [
          { kind: 'to', recipientName: 'Ann', recipientMail: 'ann@example.com', outcome: 'accepted', reply: '250 2.0.0 ok', updatedAt: at },
          {
            kind: 'to',
            recipientName: 'Bob',
            recipientMail: 'bob@example.com',
            outcome: 'rejected',
            reply: '550 5.1.1 no such user',
            updatedAt: at,
          },
          {
            kind: 'cc',
            recipientName: '',
            recipientMail: 'carl@example.com',
            outcome: 'deferred',
            reply: '451 4.2.0 try later',
            updatedAt: at,
          },
          { kind: 'bcc', recipientName: '', recipientMail: 'dora@example.com', outcome: 'pending', reply: null, updatedAt: null },
          {
            kind: 'envelope',
            recipientName: '',
            recipientMail: 'ann@example.com',
            outcome: 'accepted',
            reply: '250 2.0.0 ok',
            updatedAt: at,
          },
          {
            kind: 'envelope',
            recipientName: '',
            recipientMail: 'bob@example.com',
            outcome: 'rejected',
            reply: '550 5.1.1 no such user',
            updatedAt: at,
          },
          {
            kind: 'envelope',
            recipientName: '',
            recipientMail: 'carl@example.com',
            outcome: 'deferred',
            reply: '451 4.2.0 try later',
            updatedAt: at,
          },
          { kind: 'envelope', recipientName: '', recipientMail: 'dora@example.com', outcome: 'pending', reply: null, updatedAt: null },
          {
            kind: 'envelope',
            recipientName: '',
            recipientMail: 'eve@example.com',
            outcome: 'rejected',
            reply: '550 5.7.1 refused',
            updatedAt: at,
          },
        ],
      }),
    );
    const recipients = await section('Recipients');
    expect(within(recipients).getByRole('note')).toHaveTextContent('2 of 5 recipients rejected');
    const rows = rowsOf(recipients);
    // Header recipients once each (their envelope rows are not repeated), then the envelope-only address.
    expect(texts(rows)).toEqual([
      ['To', 'Ann | ann@example.com', 'accepted', '250 2.0.0 ok'],
      ['To', 'Bob | bob@example.com', 'rejected', '550 5.1.1 no such user'],
      ['Cc', 'carl@example.com', 'deferred (will be retried)', '451 4.2.0 try later'],
      ['Bcc', 'dora@example.com', 'pending', ''],
      ['Envelope', 'eve@example.com', 'rejected', '550 5.7.1 refused'],
    ]);
  });

  it('a header recipient outside the envelope has no outcome; a mail with no refusal has no summary', async () => {
    renderDrawer(
      buildDetail({
        to: [{ recipientName: 'List', recipientMail: 'list@example.com' }],
        rejectedRecipients: 0,
        recipients: [{ kind: 'to', recipientName: 'List', recipientMail: 'list@example.com', outcome: null, reply: null, updatedAt: null }],
      }),
    );
    const recipients = await section('Recipients');
    expect(within(recipients).queryByRole('note')).not.toBeInTheDocument();
    expect(rowWith(recipients, 'list@example.com').cells[2]).toHaveTextContent('—');
  });

  it('a bounced and a complained recipient show the report that came back: status code, action, diagnostic, when', async () => {
    const at = '2026-11-23T13:05:10.000Z';
    const report = (id: number, overrides: Partial<BounceReport['summary']>, receivedAt: string): BounceReport => ({
      id,
      receivedAt,
      envelopeFrom: '',
      envelopeTo: 'b-7-abcdefghij@bounce.test',
      kind: overrides.feedback ? 'arf' : 'dsn',
      mailId: 7,
      matchedBy: 'return-path',
      size: 2000,
      summary: { subject: null, recipients: [], feedback: null, originalMessageId: null, problem: null, applied: [], ...overrides },
    });
    const person = (recipientMail: string, outcome: RecipientDelivery['outcome'], reply: string | null): RecipientDelivery => ({
      kind: 'to',
      recipientName: '',
      recipientMail,
      outcome,
      reply,
      updatedAt: at,
    });
    renderDrawer(
      buildDetail({
        status: 3,
        to: ['kept@example.net', 'Gone@Example.net', 'angry@example.net'].map((recipientMail) => ({ recipientName: '', recipientMail })),
        recipientCount: 3,
        rejectedRecipients: 1,
        recipients: [
          person('kept@example.net', 'accepted', '250 ok'),
          person('Gone@Example.net', 'bounced', '550 5.1.1 <gone@example.net>: User unknown'),
          person('angry@example.net', 'complained', 'Complaint (Feedback-Type: abuse)'),
        ],
        bounces: [
          // An earlier delayed report about the same address is not the one that bounced it.
          report(
            1,
            {
              recipients: [{ recipient: 'gone@example.net', action: 'delayed', status: '4.4.7', diagnostic: '451 4.4.7 later' }],
              applied: [{ recipient: 'gone@example.net', outcome: 'delayed' }],
            },
            '2026-11-23T13:10:00.000Z',
          ),
          report(
            2,
            {
              recipients: [
                {
                  recipient: 'gone@example.net',
                  action: 'failed',
                  status: '5.1.1',
                  diagnostic: 'smtp; 550 5.1.1 <gone@example.net>: User unknown',
                },
              ],
              applied: [{ recipient: 'gone@example.net', outcome: 'bounced' }],
            },
            '2026-11-23T14:00:00.000Z',
          ),
          report(
            3,
            {
              feedback: { type: 'abuse', recipients: ['angry@example.net'], userAgent: 'ExampleISP-FBL/1.0' },
              applied: [{ recipient: 'angry@example.net', outcome: 'complained' }],
            },
            '2026-11-23T15:00:00.000Z',
          ),
        ],
      }),
    );
    const recipients = await section('Recipients');
    // The marker counts the bounced recipient (the server's rejectedRecipients, docs/bounces.md).
    expect(within(recipients).getByRole('note')).toHaveTextContent('1 of 3 recipients rejected');
    // A report row follows the bounced and the complained recipient only.
    const rows = rowsOf(recipients);
    expect(rows.map((row) => row.className || row.cells[1]!.textContent)).toEqual([
      'kept@example.net',
      'Gone@Example.net',
      'detail-table__report',
      'angry@example.net',
      'detail-table__report',
    ]);
    expect(rows[1]!.cells[2]).toHaveTextContent('bounced (after the relay accepted it)');
    expect(rows[3]!.cells[2]).toHaveTextContent('complained');

    const bounceReport = within(recipients).getByLabelText('Bounce report for Gone@Example.net');
    const fieldsOf = (list: HTMLElement) =>
      Array.from(list.querySelectorAll('.report__field'), (field) => [
        field.querySelector('dt')!.textContent,
        field.querySelector('dd')!.textContent,
      ]);
    expect(fieldsOf(bounceReport)).toEqual([
      ['Bounce report received', expect.stringMatching(/\S/)],
      ['Status', '5.1.1'],
      ['Action', 'failed'],
      ['Diagnostic', 'smtp; 550 5.1.1 <gone@example.net>: User unknown'],
    ]);
    // When: the report's own time, exact UTC on hover; not the delayed report's.
    expect(within(bounceReport).getByRole('time')).toHaveAttribute('title', '2026-11-23T14:00:00.000Z');

    const complaint = within(recipients).getByLabelText('Complaint for angry@example.net');
    expect(fieldsOf(complaint)).toEqual([
      ['Complaint received', expect.stringMatching(/\S/)],
      ['Feedback type', 'abuse'],
      ['Reported by', 'ExampleISP-FBL/1.0'],
    ]);
    expect(within(complaint).getByRole('time')).toHaveAttribute('title', '2026-11-23T15:00:00.000Z');
  });

  it('lists the attachments by name, type and size, inline parts marked', async () => {
    renderDrawer(
      buildDetail({
        attachments: [
          { filename: 'invoice-42.pdf', contentType: 'application/pdf', size: 10_000, disposition: 'attachment' },
          { filename: 'logo.png', contentType: 'image/png', size: 7, disposition: 'inline' },
          { filename: null, contentType: 'application/octet-stream', size: 3 * 1024 * 1024, disposition: 'attachment' },
        ],
      }),
    );
    const attachments = await section('Attachments');
    const rows = rowsOf(attachments);
    expect(texts(rows)).toEqual([
      ['invoice-42.pdf', 'application/pdf', '9.8 KiB'],
      ['logo.png (inline)', 'image/png', '7 bytes'],
      ['(no name)', 'application/octet-stream', '3 MiB'],
    ]);
    expect(rows[0]!.cells[2]).toHaveAttribute('title', '10,000 bytes');
  });

  it('a scheduled mail says when it is to be sent, and its status says scheduled', async () => {
    const sendAt = new Date(Date.now() + 86_400_000).toISOString();
    renderDrawer(buildDetail({ status: 0, attempts: 0, sendAt, nextAttemptAt: sendAt, providerReply: null }));
    const label = await screen.findByText('Scheduled for', {}, { timeout: 5000 });
    const fact = label.closest('.facts__row')! as HTMLElement;
    expect(
      within(fact).getByText((_, element) => element?.tagName === 'TIME' && element.getAttribute('datetime') === sendAt),
    ).toBeInTheDocument();
    expect(screen.getByTitle(`Queued, scheduled for ${sendAt}`)).toBeInTheDocument();
  });

  it('names the lane the mail was accepted into', async () => {
    renderDrawer(buildDetail({ lane: 'bulk' }));
    const label = await screen.findByText('Lane', {}, { timeout: 5000 });
    expect(label.closest('.facts__row')).toHaveTextContent('Lanebulk');
  });

  it('an unscheduled mail has no "Scheduled for"', async () => {
    renderDrawer(buildDetail({ sendAt: null }));
    await screen.findByText('Attempts', {}, { timeout: 5000 });
    expect(screen.queryByText('Scheduled for')).not.toBeInTheDocument();
  });

  it('says so when the message has no attachments', async () => {
    renderDrawer(buildDetail());
    expect(within(await section('Attachments')).getByText('No attachments')).toBeInTheDocument();
  });

  it("shows an event's detail as labelled fields, each recipient's answer on its own line, not as JSON", async () => {
    renderDrawer(
      buildDetail({
        events: [
          {
            at: '2026-11-23T13:05:10.000Z',
            actor: 'worker:w1',
            type: 'recipients-deferred',
            fromStatus: 2,
            toStatus: 0,
            detail: {
              attempt: 1,
              reply: '451 4.7.1 try later',
              durationMs: 1234,
              recipients: [
                { address: 'ann@example.com', outcome: 'accepted', reply: '250 ok' },
                { address: 'bob@example.com', outcome: 'deferred', reply: '451 4.7.1 try later' },
              ],
              pendingRecipients: ['bob@example.com'],
            },
          },
        ],
      }),
    );
    const log = await section('Event log');
    const detail = log.querySelector('dl.event-detail')!;
    const pairs = Array.from(detail.querySelectorAll('dt'), (dt) => [dt.textContent, dt.nextElementSibling?.textContent]);
    expect(pairs).toEqual([
      ['Attempt', '1'],
      ['Reply', '451 4.7.1 try later'],
      ['Took', '1,234 ms'],
      ['Recipients', 'ann@example.com · accepted · 250 okbob@example.com · deferred · 451 4.7.1 try later'],
      ['Going again to', 'bob@example.com'],
    ]);
    expect(log.textContent).not.toContain('{');
  });

  it('names the relay that took an attempt and the relays it failed over from (docs/relays.md)', async () => {
    renderDrawer(
      buildDetail({
        events: [
          {
            at: '2026-11-23T13:05:10.000Z',
            actor: 'worker:w1',
            type: 'sent',
            fromStatus: 2,
            toStatus: 3,
            detail: {
              attempt: 1,
              reply: '250 OK',
              relay: 'backup',
              passedOver: [{ relay: 'primary', reply: 'connect ECONNREFUSED 127.0.0.1:2525' }],
            },
          },
        ],
      }),
    );
    const log = await section('Event log');
    const detail = log.querySelector('dl.event-detail')!;
    const pairs = Array.from(detail.querySelectorAll('dt'), (dt) => [dt.textContent, dt.nextElementSibling?.textContent]);
    expect(pairs).toEqual([
      ['Attempt', '1'],
      ['Reply', '250 OK'],
      ['Relay', 'backup'],
      ['Failed over from', 'primary · connect ECONNREFUSED 127.0.0.1:2525'],
    ]);
  });

  it("lists the webhook deliveries of the mail's events with their state and last answer", async () => {
    server.use(
      http.get('/api/v1/mail/:id/webhook-deliveries', () =>
        HttpResponse.json({
          data: [
            {
              id: 3,
              endpointId: 1,
              endpointUrl: 'https://crm.example.com/hook',
              eventId: 'evt_a',
              eventType: 'mail.sent',
              mailId: 7,
              state: 'retrying',
              createdAt: '2026-11-23T13:05:10.000Z',
              nextAttemptAt: '2026-11-23T13:10:10.000Z',
              attempts: [{ at: '2026-11-23T13:05:10.000Z', httpStatus: 500, durationMs: 12, response: 'down', error: null }],
            },
          ],
        }),
      ),
    );
    renderDrawer(buildDetail());
    const deliveries = await section('Webhook deliveries');
    await within(deliveries).findByText('mail.sent');
    expect(texts(rowsOf(deliveries))[0]!.slice(1)).toEqual([
      'mail.sent',
      'https://crm.example.com/hook',
      'retrying',
      '1',
      'HTTP 500 in 12 ms',
    ]);
  });

  it('says so when no webhook delivery was made for the mail', async () => {
    renderDrawer(buildDetail());
    expect(await within(await section('Webhook deliveries')).findByText('No webhook deliveries')).toBeInTheDocument();
  });
});

describe('MailDrawer: Load remote images', () => {
  /** A 1×1 transparent PNG, as the image proxy would answer it. */
  const PNG = Uint8Array.from(atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII='), (c) =>
    c.charCodeAt(0),
  );
  const frameOf = () => screen.getByTitle('HTML body');

  it('asks nothing before the click, then fetches each remote image through the proxy with the token and puts it in the frame as a data: URL', async () => {
    const asked: Array<{ url: string | null; authorization: string | null }> = [];
    server.use(
      http.get('/api/v1/mail/7/remote-image', ({ request }) => {
        const url = new URL(request.url).searchParams.get('url');
        asked.push({ url, authorization: request.headers.get('authorization') });
        if (url === 'https://img.example/gone.png') {
          return HttpResponse.json({ error: { code: 'image_upstream_status', message: 'The image host answered 404.' } }, { status: 502 });
        }
        return new HttpResponse(PNG, { headers: { 'content-type': 'image/png' } });
      }),
    );
    renderDrawer(
      buildDetail({
        html:
          '<p>Hi</p><img id="logo" src="https://img.example/logo.png?a=1&amp;b=2">' +
          '<img id="hero" srcset="https://img.example/w_100,h_50/hero.png 1x, https://img.example/gone.png 2x">' +
          '<table><tr><td style="background: url(\'https://img.example/bg.png\')"></td></tr></table><img src="data:image/gif;base64,R0lGOD">',
      }),
    );
    const button = await screen.findByRole('button', { name: 'Load remote images' });
    expect(screen.getByRole('status')).toHaveTextContent('Remote images are blocked.');
    const before = frameOf().getAttribute('srcdoc')!;
    expect(before).toContain('img-src data:;');
    expect(before).toContain('https://img.example/logo.png');
    expect(asked).toEqual([]);

    await userEvent.click(button);
    await screen.findByText(/Remote images are loaded, except 1 of 4: The image host answered 404\./);
    // Each URL once, as the mail writes it (character references decoded), with the operator's token.
    expect(asked.map((request) => request.url).sort()).toEqual([
      'https://img.example/bg.png',
      'https://img.example/gone.png',
      'https://img.example/logo.png?a=1&b=2',
      'https://img.example/w_100,h_50/hero.png',
    ]);
    expect(new Set(asked.map((request) => request.authorization))).toEqual(new Set([`Token ${TOKEN}`]));
    const after = frameOf().getAttribute('srcdoc')!;
    const dataUrl = 'data:image/png;base64,iVBORw0KGgo';
    const frameDocument = new DOMParser().parseFromString(after, 'text/html');
    expect(frameDocument.querySelector('#logo')!.getAttribute('src')).toMatch(new RegExp(`^${dataUrl}`));
    // The loaded candidate is inlined, the failed one keeps its remote URL, which the frame's policy blocks.
    expect(frameDocument.querySelector('#hero')!.getAttribute('srcset')).toMatch(
      new RegExp(`^${dataUrl}\\S+ 1x, https://img\\.example/gone\\.png 2x$`),
    );
    expect(frameDocument.querySelector('td')!.getAttribute('style')).toContain(`url('${dataUrl}`);
    // The frame stays as closed as before: data: images only, no script, no origin.
    expect(after).toContain('img-src data:;');
    expect(after).not.toMatch(/img-src[^;]*http/);
    expect(frameOf()).toHaveAttribute('sandbox', '');
    expect(screen.queryByRole('button', { name: 'Load remote images' })).toBeNull();
  });

  it('says so when a mail has no remote images, asking the server nothing', async () => {
    renderDrawer(buildDetail({ html: '<p>Plain</p><img src="cid:logo@shop">' }));
    await userEvent.click(await screen.findByRole('button', { name: 'Load remote images' }));
    expect(await screen.findByText('This mail has no remote images.')).toBeVisible();
  });

  it('says when content retention removed the content, where the bodies were, and offers neither Requeue nor the .eml', async () => {
    const removedAt = '2026-11-30T08:15:00.000Z';
    renderDrawer(
      buildDetail({
        status: 4,
        contentRemovedAt: removedAt,
        headers: [],
        text: null,
        html: null,
        attachments: [],
      }),
    );
    const content = await section('Content');
    expect(content).toHaveTextContent(/^Content\s*Content removed on \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\./);
    expect(
      within(content)
        .getByText(/\d{4}-\d{2}-\d{2}/)
        .closest('time'),
    ).toHaveAttribute('datetime', removedAt);
    expect(content).toHaveTextContent('It cannot be requeued or downloaded.');
    for (const gone of ['Text body', 'HTML body', 'Attachments', 'Headers'])
      expect(screen.queryByRole('heading', { name: gone })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Requeue mail #7' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Download .eml' })).toBeNull();
    // Deleting it stays possible.
    expect(screen.getByRole('button', { name: 'Delete mail #7' })).toBeInTheDocument();
  });

  it('keeps the bodies, Requeue and the .eml while the content is kept', async () => {
    renderDrawer(buildDetail({ status: 4, contentRemovedAt: null }));
    expect(await section('Text body')).toHaveTextContent('Hello');
    expect(screen.queryByRole('heading', { name: 'Content' })).toBeNull();
    expect(screen.getByRole('button', { name: 'Requeue mail #7' })).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Download .eml' })).toBeInTheDocument();
  });
});
