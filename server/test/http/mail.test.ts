import { MailStatus, type MailListResponse } from '@outbox/contract';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auth, createTestContext, loginAs, testEngine, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';

describe('mail API', () => {
  let context: TestContext;
  let token: string;
  // One app for the file, its store emptied after each test (TestContext.reset).
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());
  beforeEach(async () => {
    token = await loginAs(context);
  });
  afterEach(() => context.reset());

  const list = async (query = '') => {
    const response = await context.app.inject({ method: 'GET', url: `/api/v1/mail/list${query}`, headers: auth(token) });
    return { status: response.statusCode, body: response.json() as MailListResponse };
  };

  describe('GET /api/v1/mail/list', () => {
    it('returns every mail in data, with the fields of the spec, newest first', async () => {
      await seedMails(context.store, [
        {
          subject: 'first',
          fromName: 'Ann',
          fromMail: 'ann@example.com',
          to: [
            { name: 'Bo', address: 'bo@example.com' },
            { name: 'Cy', address: 'cy@example.org' },
          ],
        },
        { subject: 'second', status: MailStatus.ProviderSent, providerSentAt: Date.parse('2026-11-23T09:30:00Z') },
      ]);
      const { status, body } = await list();
      expect(status).toBe(200);
      expect(body.data.map((m) => m.subject)).toEqual(['second', 'first']);
      expect(body.data[1]).toEqual({
        id: expect.any(Number),
        fromName: 'Ann',
        fromMail: 'ann@example.com',
        to: [
          { recipientName: 'Bo', recipientMail: 'bo@example.com' },
          { recipientName: 'Cy', recipientMail: 'cy@example.org' },
        ],
        subject: 'first',
        status: 0,
        providerSentDate: null,
        receivedDate: '2026-11-23T09:00:00.000Z',
        lastUpdate: '2026-11-23T09:00:00.000Z',
        // Seeded without envelope rows (test/support/mails.ts), so no recipient is delivered to.
        recipientCount: 0,
        rejectedRecipients: 0,
        sendAt: null,
      });
      expect(body.data[0]!.providerSentDate).toBe('2026-11-23T09:30:00.000Z');
      expect(body.meta.total).toBe(2);
      expect(body.meta.counts).toEqual({ '0': 1, '1': 0, '2': 0, '3': 1, '4': 0, '5': 0 });
    });

    it('accepts Content-Type JSON with no body on GET, as the spec client sends it', async () => {
      const response = await context.app.inject({
        method: 'GET',
        url: '/api/v1/mail/list',
        headers: { ...auth(token), 'content-type': 'application/json' },
      });
      expect(response.statusCode).toBe(200);
    });

    it('pages with keyset cursors forward and back, covering every mail exactly once', async () => {
      await seedMails(
        context.store,
        Array.from({ length: 23 }, (_, i) => ({ subject: `m${String(i).padStart(2, '0')}` })),
      );
      const seen: string[] = [];
      let cursor: string | null = null;
      const pages: MailListResponse[] = [];
      do {
        const { body } = await list(`?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
        pages.push(body);
        seen.push(...body.data.map((m) => m.subject));
        cursor = body.meta.nextCursor;
      } while (cursor);
      expect(pages.map((p) => p.data.length)).toEqual([10, 10, 3]);
      expect(seen).toEqual(Array.from({ length: 23 }, (_, i) => `m${String(22 - i).padStart(2, '0')}`));
      expect(pages[0]!.meta.prevCursor).toBeNull();
      expect(pages.every((p) => p.meta.total === 23)).toBe(true);
      const back = await list(`?limit=10&cursor=${pages[2]!.meta.prevCursor}`);
      expect(back.body.data.map((m) => m.subject)).toEqual(pages[1]!.data.map((m) => m.subject));
      const first = await list(`?limit=10&cursor=${back.body.meta.prevCursor}`);
      expect(first.body.data.map((m) => m.subject)).toEqual(pages[0]!.data.map((m) => m.subject));
      expect(first.body.meta.prevCursor).toBeNull();
      expect(first.body.meta.nextCursor).not.toBeNull();
    });

    it.each([
      ['subject', 'asc'],
      ['subject', 'desc'],
      ['status', 'asc'],
      ['from', 'desc'],
      ['providerSentDate', 'desc'],
      ['lastUpdate', 'asc'],
    ])('sorts by %s %s across pages with ties broken by id', async (sort, order) => {
      await seedMails(
        context.store,
        Array.from({ length: 17 }, (_, i) => ({
          subject: `s${i % 5}`,
          status: i % 6,
          fromMail: `f${i % 3}@example.com`,
          providerSentAt: i % 2 ? Date.parse('2026-11-20T00:00:00Z') + i : 0,
        })),
      );
      const all = (await list(`?sort=${sort}&order=${order}`)).body.data;
      const paged: typeof all = [];
      let cursor: string | null = null;
      do {
        const { body } = await list(`?sort=${sort}&order=${order}&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
        paged.push(...body.data);
        cursor = body.meta.nextCursor;
      } while (cursor);
      expect(paged.map((m) => m.id)).toEqual(all.map((m) => m.id));
      const key = (m: (typeof all)[number]) =>
        sort === 'subject'
          ? m.subject
          : sort === 'status'
            ? m.status
            : sort === 'from'
              ? m.fromMail
              : sort === 'providerSentDate'
                ? (m.providerSentDate ?? '')
                : (m.lastUpdate ?? '');
      const keys = all.map(key);
      const sorted = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      expect(keys).toEqual(order === 'asc' ? sorted : sorted.reverse());
    });

    it('filters by status with an exact total, and searches from/to/subject', async () => {
      await seedMails(context.store, [
        { status: 0, subject: 'Invoice 1' },
        { status: 4, subject: 'Invoice 2' },
        { status: 5, subject: 'Welcome', to: [{ name: 'Zoë Müller', address: 'zoe@example.de' }] },
        { status: 3, subject: '100% off_sale' },
      ]);
      const failed = await list('?status=4,5');
      expect(failed.body.data.map((m) => m.status).sort()).toEqual([4, 5]);
      expect(failed.body.meta.total).toBe(2);
      const search = await list('?q=invoice');
      expect(search.body.data.map((m) => m.subject).sort()).toEqual(['Invoice 1', 'Invoice 2']);
      expect(search.body.meta).toMatchObject({ total: 2, totalIsEstimate: false });
      expect((await list('?q=ZOË')).body.data.map((m) => m.subject)).toEqual(['Welcome']);
      expect((await list('?q=100%25')).body.data.map((m) => m.subject)).toEqual(['100% off_sale']);
      expect((await list('?q=%25')).body.data).toHaveLength(1);
      expect((await list('?q=invoice&status=0')).body.data.map((m) => m.subject)).toEqual(['Invoice 1']);
    });

    it.each([
      ['?limit=0', 'query.limit must be >= 1'],
      ['?limit=501', 'query.limit must be <= 500'],
      ['?limit=abc', 'query.limit must be integer'],
      ['?sort=password', 'query.sort must be one of receivedDate, lastUpdate, providerSentDate, subject, status, from'],
      ['?order=up', 'query.order must be one of asc, desc'],
      ['?status=9', 'query.status'],
      ['?cursor=not-a-cursor', 'cursor'],
    ])('answers 400 naming the field for %s', async (query, message) => {
      const { status, body } = await list(query);
      expect(status).toBe(400);
      expect((body as unknown as { error: { message: string } }).error.message).toContain(message);
    });

    it('refuses a cursor issued for another sort', async () => {
      await seedMails(
        context.store,
        Array.from({ length: 3 }, () => ({})),
      );
      const { body } = await list('?limit=1');
      const other = await list(`?limit=1&sort=subject&cursor=${body.meta.nextCursor}`);
      expect(other.status).toBe(400);
      expect((other.body as unknown as { error: { code: string } }).error.code).toBe('invalid_cursor');
    });

    it('shows "No data" as an empty list with total 0', async () => {
      const { body } = await list();
      expect(body.data).toEqual([]);
      expect(body.meta.total).toBe(0);
    });
  });

  describe('GET /api/v1/mail/{id}/dequeue', () => {
    it('moves a Queued mail to Dequeued, updates lastUpdate, writes an event and an audit entry', async () => {
      const [id] = await seedMails(context.store, [{ status: MailStatus.Queued }]);
      context.clock.advance(5000);
      const response = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/dequeue`, headers: auth(token) });
      expect(response.statusCode).toBe(200);
      expect(response.json().data[0]).toMatchObject({
        id,
        status: MailStatus.Dequeued,
        lastUpdate: new Date(context.clock.now()).toISOString(),
      });
      const events = await context.store.db.selectFrom('mail_events').selectAll().where('mail_id', '=', id!).execute();
      expect(events).toMatchObject([{ type: 'dequeued', actor: 'operator:ops', from_status: 0, to_status: 1 }]);
      const audit = await context.store.db.selectFrom('audit_log').selectAll().where('action', '=', 'mail.dequeue').execute();
      expect(audit).toHaveLength(1);
      expect((await list()).body.meta.counts).toMatchObject({ '0': 0, '1': 1 });
    });

    it('also works as POST', async () => {
      const [id] = await seedMails(context.store, [{ status: MailStatus.Queued }]);
      const response = await context.app.inject({ method: 'POST', url: `/api/v1/mail/${id}/dequeue`, headers: auth(token) });
      expect(response.statusCode).toBe(200);
    });

    it.each([1, 2, 3, 4, 5])('answers 409 invalid_status for a mail in status %i and changes nothing', async (status) => {
      const [id] = await seedMails(context.store, [{ status }]);
      const response = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/dequeue`, headers: auth(token) });
      expect(response.statusCode).toBe(409);
      expect(response.json().error.code).toBe('invalid_status');
      expect(response.json().error.message).toContain(`Mail ${id} is`);
      expect((await list()).body.data[0]!.status).toBe(status);
    });

    it('answers 404 for an unknown id and 400 for a malformed one', async () => {
      const missing = await context.app.inject({ method: 'GET', url: '/api/v1/mail/999/dequeue', headers: auth(token) });
      expect(missing.statusCode).toBe(404);
      expect(missing.json().error.code).toBe('mail_not_found');
      const malformed = await context.app.inject({ method: 'GET', url: '/api/v1/mail/abc/dequeue', headers: auth(token) });
      expect(malformed.statusCode).toBe(400);
      expect(malformed.json().error.message).toContain('path.id');
      const zero = await context.app.inject({ method: 'GET', url: '/api/v1/mail/0/dequeue', headers: auth(token) });
      expect(zero.statusCode).toBe(400);
    });

    it('answers 401 without a token', async () => {
      const [id] = await seedMails(context.store, [{ status: MailStatus.Queued }]);
      const response = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/dequeue` });
      expect(response.statusCode).toBe(401);
    });

    it('lets exactly one of many concurrent dequeues win', async () => {
      const [id] = await seedMails(context.store, [{ status: MailStatus.Queued }]);
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/dequeue`, headers: auth(token) })),
      );
      expect(responses.filter((r) => r.statusCode === 200)).toHaveLength(1);
      expect(responses.filter((r) => r.statusCode === 409)).toHaveLength(9);
      expect((await list()).body.meta.counts).toMatchObject({ '0': 0, '1': 1 });
    });
  });

  describe('DELETE /api/v1/mail/{id}', () => {
    it.each([1, 3, 4, 5])('deletes a mail in status %i, answers {data:[{id}]}, and keeps the counters exact', async (status) => {
      const [id] = await seedMails(context.store, [{ status }]);
      const response = await context.app.inject({
        method: 'DELETE',
        url: `/api/v1/mail/${id}`,
        headers: { ...auth(token), 'content-type': 'application/json' },
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ data: [{ id }] });
      const { body } = await list();
      expect(body.data).toEqual([]);
      expect(body.meta.total).toBe(0);
      expect(Object.values(body.meta.counts).every((n) => n === 0)).toBe(true);
      const again = await context.app.inject({ method: 'DELETE', url: `/api/v1/mail/${id}`, headers: auth(token) });
      expect(again.statusCode).toBe(404);
      const audit = await context.store.db.selectFrom('audit_log').selectAll().where('action', '=', 'mail.delete').execute();
      expect(audit).toHaveLength(1);
      expect(JSON.parse(audit[0]!.before_json!)).toMatchObject({ subject: 'Subject 0' });
    });

    it.each([0, 2])('answers 409 for a mail in status %i and keeps it', async (status) => {
      const [id] = await seedMails(context.store, [{ status }]);
      const response = await context.app.inject({ method: 'DELETE', url: `/api/v1/mail/${id}`, headers: auth(token) });
      expect(response.statusCode).toBe(409);
      expect(response.json().error.code).toBe('invalid_status');
      expect((await list()).body.data).toHaveLength(1);
    });

    it('removes the recipients and events with the mail', async () => {
      const [id] = await seedMails(context.store, [{ status: MailStatus.Queued }]);
      await context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/dequeue`, headers: auth(token) });
      await context.app.inject({ method: 'DELETE', url: `/api/v1/mail/${id}`, headers: auth(token) });
      expect(await context.store.db.selectFrom('mail_recipients').selectAll().execute()).toEqual([]);
      expect(await context.store.db.selectFrom('mail_events').selectAll().execute()).toEqual([]);
    });
  });

  describe('POST /api/v1/mail/{id}/requeue', () => {
    it.each([1, 4, 5])('puts a mail in status %i back in the queue', async (status) => {
      const [id] = await seedMails(context.store, [{ status }]);
      const response = await context.app.inject({ method: 'POST', url: `/api/v1/mail/${id}/requeue`, headers: auth(token) });
      expect(response.statusCode).toBe(200);
      expect(response.json().data[0].status).toBe(MailStatus.Queued);
    });

    it.each([0, 2, 3])('answers 409 for status %i', async (status) => {
      const [id] = await seedMails(context.store, [{ status }]);
      const response = await context.app.inject({ method: 'POST', url: `/api/v1/mail/${id}/requeue`, headers: auth(token) });
      expect(response.statusCode).toBe(409);
    });
  });

  describe('the rest of the surface', () => {
    it('answers JSON 404 for an unknown route', async () => {
      const response = await context.app.inject({ method: 'GET', url: '/api/v1/nothing' });
      expect(response.statusCode).toBe(404);
      expect(response.json().error.code).toBe('route_not_found');
    });

    it('serves /healthz and an OpenAPI document naming the spec calls', async () => {
      expect((await context.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok', store: testEngine });
      const openapi = (await context.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
      expect(Object.keys(openapi.paths)).toEqual(
        expect.arrayContaining(['/api/v1/login', '/api/v1/mail/list', '/api/v1/mail/{id}', '/api/v1/mail/{id}/dequeue']),
      );
    });

    it('serves /metrics in the Prometheus text format: mails per status from the counters, oldest Queued age, process figures', async () => {
      const now = context.clock.now();
      await seedMails(context.store, [
        { status: 0, receivedAt: now - 90_000 },
        { status: 0, receivedAt: now - 10_000 },
        { status: 3 },
        { status: 4 },
      ]);
      const response = await context.app.inject({ method: 'GET', url: '/metrics' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/plain/);
      expect(response.body).toContain('outbox_mails{status="Queued"} 2');
      expect(response.body).toContain('outbox_mails{status="ProviderSent"} 1');
      expect(response.body).toContain('outbox_mails{status="ProviderError"} 1');
      expect(response.body).toContain('outbox_mails{status="Processing"} 0');
      expect(response.body).toMatch(/^outbox_queue_oldest_age_seconds 90$/m);
      expect(response.body).toMatch(/^outbox_process_resident_memory_bytes \d+/m);
    });

    it('sends security headers', async () => {
      const response = await context.app.inject({ method: 'GET', url: '/healthz' });
      expect(response.headers['content-security-policy']).toContain("default-src 'self'");
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      // Outbox serves plain HTTP; the console must load over http on a LAN address too.
      expect(response.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
      expect(response.headers['strict-transport-security']).toBeUndefined();
      // No remote image loads in the operator's browser: "Load remote images" goes through the server's image
      // proxy and hands the frame data: URLs (docs/console.md §10.10); scripts stay strict.
      expect(response.headers['content-security-policy']).toContain("img-src 'self' data:;");
      expect(response.headers['content-security-policy']).not.toMatch(/img-src[^;]*https?:/);
      expect(response.headers['content-security-policy']).toContain("script-src 'self';");
    });
  });
});
