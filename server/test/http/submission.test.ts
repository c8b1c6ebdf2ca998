/**
 * `POST /api/v1/mail` (docs/api.md#submission-post-apiv1mail) from the outside: everything goes through inject,
 * against a real store (SQLite, or PostgreSQL with OUTBOX_TEST_ENGINE=postgres).
 */
import { simpleParser } from 'mailparser';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';

interface MailBody {
  id: number;
  fromName: string;
  fromMail: string;
  to: Array<{ recipientName: string; recipientMail: string }>;
  subject: string;
  status: number;
  providerSentDate: string | null;
  receivedDate: string | null;
  lastUpdate: string | null;
}

interface DetailBody extends MailBody {
  messageId: string;
  cc: Array<{ recipientName: string; recipientMail: string }>;
  bcc: Array<{ recipientName: string; recipientMail: string }>;
  envelopeFrom: string | null;
  envelopeTo: string[];
  headers: Array<{ name: string; value: string }>;
  text: string | null;
  html: string | null;
  events: Array<{ at: string; actor: string; type: string; fromStatus: number | null; toStatus: number | null }>;
}

interface ErrorResponse {
  error: { code: string; message: string };
}

const NOW = '2026-11-23T10:00:00.000Z';

/** A valid submission; tests spread their change over it. */
const valid = () => ({
  fromName: 'Shop',
  fromMail: 'shop@example.com',
  to: [{ recipientName: 'Ann Example', recipientMail: 'ann@example.com' }],
  subject: 'Your order',
  text: 'Thanks for your order.',
});

/** The header block of a raw message, unfolded into one string. */
const headerBlockOf = (raw: Buffer) => {
  const text = raw.toString('latin1');
  return text.slice(0, text.indexOf('\r\n\r\n'));
};

describe('POST /api/v1/mail', () => {
  let context: TestContext;
  let apiKey: string;
  let operatorToken: string;

  // One app for the file, its store emptied after each test: building the app per test was most of this
  // file's time. Each test gets a fresh store, clock, key and login all the same.
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());
  beforeEach(async () => {
    apiKey = await context.services.auth.createApiKey('shop');
    operatorToken = await loginAs(context);
  });
  afterEach(() => context.reset());

  /** `key: null` sends no Authorization header. */
  const submit = (payload: unknown, key: string | null = apiKey) =>
    context.app.inject({
      method: 'POST',
      url: '/api/v1/mail',
      headers: key === null ? { 'content-type': 'application/json' } : auth(key),
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });

  const submitOk = async (payload: unknown, key: string = apiKey): Promise<MailBody[]> => {
    const response = await submit(payload, key);
    expect(response.statusCode, response.body).toBe(202);
    return (response.json() as { data: MailBody[] }).data;
  };

  const list = async () => {
    const response = await context.app.inject({ method: 'GET', url: '/api/v1/mail/list', headers: auth(operatorToken) });
    expect(response.statusCode).toBe(200);
    return response.json() as { data: MailBody[]; meta: { total: number; counts: Record<string, number> } };
  };

  const detail = async (id: number): Promise<DetailBody> => {
    const response = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}`, headers: auth(operatorToken) });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { data: DetailBody[] }).data[0]!;
  };

  const raw = async (id: number): Promise<Buffer> => {
    const response = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/raw`, headers: auth(operatorToken) });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^message\/rfc822/);
    return response.rawPayload;
  };

  const expectBadRequest = async (payload: unknown, field: string) => {
    const response = await submit(payload);
    expect(response.statusCode, response.body).toBe(400);
    const body = response.json() as ErrorResponse;
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.message).toContain(field);
    return body.error.message;
  };

  describe('one mail', () => {
    it('answers 202 with the queued mail, fields echoed, and lists it for operators', async () => {
      const [mail] = await submitOk(valid());
      expect(mail).toEqual({
        id: expect.any(Number),
        fromName: 'Shop',
        fromMail: 'shop@example.com',
        to: [{ recipientName: 'Ann Example', recipientMail: 'ann@example.com' }],
        subject: 'Your order',
        status: 0,
        providerSentDate: null,
        receivedDate: NOW,
        lastUpdate: NOW,
        recipientCount: 1,
        rejectedRecipients: 0,
        sendAt: null,
      });
      const listed = await list();
      expect(listed.data).toEqual([mail]);
      expect(listed.meta.total).toBe(1);
      expect(listed.meta.counts['0']).toBe(1);
    });

    it('defaults an absent fromName and recipientName to empty strings', async () => {
      const [mail] = await submitOk({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.com' }], subject: 'Hi' });
      expect(mail).toMatchObject({ fromName: '', to: [{ recipientName: '', recipientMail: 'ann@example.com' }] });
    });

    it('stores a message whose headers, bodies and raw bytes the detail endpoints show', async () => {
      const [mail] = await submitOk({
        ...valid(),
        html: '<p>Thanks for your <b>order</b>.</p>',
        headers: { 'X-Campaign': 'spring', 'Reply-To': 'help@example.com' },
      });
      const shown = await detail(mail!.id);
      expect(shown.messageId).toMatch(/^<[^<>\s]+@[^<>\s]+>$/);
      const header = (name: string) => shown.headers.find((h) => h.name.toLowerCase() === name.toLowerCase())?.value;
      expect(header('From')).toBe('Shop <shop@example.com>');
      expect(header('To')).toBe('Ann Example <ann@example.com>');
      expect(header('Subject')).toBe('Your order');
      expect(header('Message-ID')).toBe(shown.messageId);
      expect(header('Date')).toBe('Mon, 23 Nov 2026 10:00:00 +0000');
      expect(header('X-Campaign')).toBe('spring');
      expect(header('Reply-To')).toBe('help@example.com');
      expect(shown.text).toBe('Thanks for your order.');
      expect(shown.html).toBe('<p>Thanks for your <b>order</b>.</p>');
      expect(shown.envelopeFrom).toBe('shop@example.com');
      expect(shown.envelopeTo).toEqual(['ann@example.com']);

      const bytes = await raw(mail!.id);
      const headers = headerBlockOf(bytes);
      expect(headers).toContain('From: Shop <shop@example.com>');
      expect(headers).toContain('To: Ann Example <ann@example.com>');
      expect(headers).toContain('Subject: Your order');
      expect(headers).toContain(`Message-ID: ${shown.messageId}`);
      expect(headers).toContain('Date: Mon, 23 Nov 2026 10:00:00 +0000');
      expect(headers).toContain('X-Campaign: spring');
      expect(bytes.toString('latin1')).not.toMatch(/[^\r]\n/);
      const parsed = await simpleParser(bytes);
      expect(parsed.text?.trim()).toBe('Thanks for your order.');
      expect(parsed.html).toContain('<b>order</b>');
    });

    it('writes cc into the headers and keeps bcc out of them, while both receive it', async () => {
      const [mail] = await submitOk({
        ...valid(),
        cc: [{ recipientName: 'Carl Copy', recipientMail: 'carl@example.org' }],
        bcc: [{ recipientName: 'Hidden Hilda', recipientMail: 'hilda@example.net' }],
      });
      expect(mail!.to).toEqual([{ recipientName: 'Ann Example', recipientMail: 'ann@example.com' }]);
      const shown = await detail(mail!.id);
      expect(shown.cc).toEqual([{ recipientName: 'Carl Copy', recipientMail: 'carl@example.org' }]);
      expect(shown.bcc).toEqual([{ recipientName: 'Hidden Hilda', recipientMail: 'hilda@example.net' }]);
      expect(shown.envelopeTo).toEqual(['ann@example.com', 'carl@example.org', 'hilda@example.net']);
      expect(shown.headers.map((h) => h.name.toLowerCase())).not.toContain('bcc');

      const bytes = await raw(mail!.id);
      const headers = headerBlockOf(bytes);
      expect(headers).toContain('Cc: Carl Copy <carl@example.org>');
      expect(headers).not.toMatch(/^bcc:/im);
      expect(bytes.toString('latin1')).not.toContain('hilda@example.net');
      expect(bytes.toString('latin1')).not.toContain('Hidden Hilda');
    });

    it('records an accepted event by the API key', async () => {
      const [mail] = await submitOk(valid());
      const shown = await detail(mail!.id);
      expect(shown.status).toBe(0);
      expect(shown.events).toEqual([{ at: NOW, actor: 'api-key:shop', type: 'accepted', fromStatus: null, toStatus: 0, detail: null }]);
    });

    it('round-trips non-ASCII names and subjects and RFC 2047-encodes them in the raw message', async () => {
      const name = 'Zoë Ωmega 東京';
      const subject = 'Grüße aus 東京 — Ωmega 👋';
      const [mail] = await submitOk({
        fromName: name,
        fromMail: 'zoe@example.com',
        to: [{ recipientName: name, recipientMail: 'ann@example.com' }],
        cc: [{ recipientName: 'Ünïcode Çc', recipientMail: 'cc@example.com' }],
        subject,
        text: 'Schöne Grüße aus 東京',
        headers: { 'X-Note': 'naïve café' },
      });
      expect(mail).toMatchObject({ fromName: name, subject, to: [{ recipientName: name, recipientMail: 'ann@example.com' }] });
      expect((await list()).data[0]).toMatchObject({ fromName: name, subject });
      const shown = await detail(mail!.id);
      expect(shown).toMatchObject({ fromName: name, subject, text: 'Schöne Grüße aus 東京' });

      const bytes = await raw(mail!.id);
      const headers = headerBlockOf(bytes);
      expect(headers).toMatch(/^[\x00-\x7f]*$/);
      expect(headers).toMatch(/^Subject: =\?UTF-8\?[BQ]\?/im);
      expect(headers).toMatch(/^From: =\?UTF-8\?[BQ]\?/im);
      const parsed = await simpleParser(bytes);
      expect(parsed.subject).toBe(subject);
      expect(parsed.from?.value[0]).toMatchObject({ name, address: 'zoe@example.com' });
      const to = Array.isArray(parsed.to) ? parsed.to[0] : parsed.to;
      expect(to?.value[0]).toMatchObject({ name, address: 'ann@example.com' });
      // Custom header values are encoded too (mailparser leaves unknown headers' encoded words as they are).
      expect(headers).toMatch(/^X-Note: =\?UTF-8\?[BQ]\?/im);
      expect(parsed.text?.trim()).toBe('Schöne Grüße aus 東京');
    });

    it('accepts a body larger than the default JSON limit, up to the submission limit', async () => {
      const text = 'a line of text that repeats\n'.repeat(80_000); // ~2.2 MB
      const [mail] = await submitOk({ ...valid(), text });
      expect((await detail(mail!.id)).text).toBe(text);
    });
  });

  describe('batch', () => {
    it('answers 202 with every mail in order', async () => {
      const mails = await submitOk(
        [0, 1, 2].map((i) => ({ ...valid(), subject: `batch ${i}`, to: [{ recipientMail: `r${i}@example.com` }] })),
      );
      expect(mails.map((m) => m.subject)).toEqual(['batch 0', 'batch 1', 'batch 2']);
      expect(mails.map((m) => m.to[0]!.recipientMail)).toEqual(['r0@example.com', 'r1@example.com', 'r2@example.com']);
      expect(mails.every((m) => m.status === 0 && m.receivedDate === NOW)).toBe(true);
      expect(new Set(mails.map((m) => m.id)).size).toBe(3);
      expect((await list()).meta.total).toBe(3);
    });

    it('answers with each mail id and status alone under Prefer: return=minimal, and stores the same mails', async () => {
      const batch = [0, 1, 2].map((i) => ({ ...valid(), subject: `short ${i}`, to: [{ recipientMail: `s${i}@example.com` }] }));
      const response = await context.app.inject({
        method: 'POST',
        url: '/api/v1/mail',
        headers: { ...auth(apiKey), prefer: 'handling=strict, return=minimal' },
        payload: batch,
      });
      expect(response.statusCode, response.body).toBe(202);
      expect(response.headers['preference-applied']).toBe('return=minimal');
      const { data } = response.json() as { data: Array<{ id: number; status: number }> };
      expect(data.map((m) => Object.keys(m).sort())).toEqual([0, 1, 2].map(() => ['id', 'status']));
      expect(data.every((m) => m.status === 0)).toBe(true);
      // The ids are the stored mails', in the batch's order.
      expect(await Promise.all(data.map(async (m) => (await detail(m.id)).subject))).toEqual(['short 0', 'short 1', 'short 2']);

      // Any other preference, or none, keeps the full answer.
      const full = await submit({ ...valid(), subject: 'full' });
      expect(full.headers['preference-applied']).toBeUndefined();
      expect((full.json() as { data: MailBody[] }).data[0]).toMatchObject({ subject: 'full', fromMail: 'shop@example.com' });
    });

    it('refuses more than 500 mails, naming the limit, and stores none', async () => {
      const message = await expectBadRequest(
        Array.from({ length: 501 }, (_, i) => ({ ...valid(), subject: `m${i}` })),
        '500',
      );
      expect(message).toMatch(/^body\b/);
      expect((await list()).meta.total).toBe(0);
    });

    it('accepts exactly 500', async () => {
      const mails = await submitOk(Array.from({ length: 500 }, (_, i) => ({ ...valid(), subject: `m${i}` })));
      expect(mails).toHaveLength(500);
      expect(mails[499]!.subject).toBe('m499');
      expect((await list()).meta.total).toBe(500);
    });

    it('refuses an empty batch', async () => {
      await expectBadRequest([], 'body');
    });

    it.each([
      ['a bad fromMail', { fromMail: 'not-an-address' }, 'body[2].fromMail'],
      ['a bad recipient', { to: [{ recipientMail: 'ann@example.com' }, { recipientMail: 'nope@' }] }, 'body[2].to[1].recipientMail'],
      ['a missing subject', { subject: undefined }, 'body[2].subject'],
      ['a CR/LF in the subject', { subject: 'a\r\nBcc: evil@x.test' }, 'body[2].subject'],
      ['an injected header', { headers: { 'X-A': 'v\r\nBcc: evil@x.test' } }, 'body[2].headers.X-A'],
      ['a reserved header', { headers: { From: 'boss@example.com' } }, 'body[2].headers.From'],
      ['a bare CR in the text (issue 24 item 3)', { text: 'x\r.\r\nMAIL FROM:<a@x.test>\r\n' }, 'body[2].text'],
    ])('refuses the whole batch for %s at index 2, naming it, and stores nothing', async (_label, change, field) => {
      await submitOk(valid());
      const batch = [0, 1, 2, 3].map((i) => ({ ...valid(), subject: `m${i}` }));
      batch[2] = { ...batch[2]!, ...change } as (typeof batch)[number];
      const message = await expectBadRequest(batch, field);
      expect(message).not.toContain('body[0]');
      expect(message).not.toContain('body[1]');
      expect((await list()).meta.total).toBe(1);
    });

    it('names the first bad mail when several are bad', async () => {
      const batch: Array<Record<string, unknown>> = [0, 1, 2, 3, 4].map((i) => ({ ...valid(), subject: `m${i}` }));
      batch[4]!.fromMail = 'bad';
      batch[3]!.subject = 7;
      batch[1]!.to = [{ recipientMail: 'also-bad' }];
      await expectBadRequest(batch, 'body[1].to[0].recipientMail');
    });
  });

  describe('400 names the field', () => {
    it.each([
      ['missing fromMail', { fromMail: undefined }, 'body.fromMail'],
      ['a fromMail that is no address', { fromMail: 'not-an-address' }, 'body.fromMail'],
      ['a recipientMail that is no address', { to: [{ recipientMail: 'not-an-address' }] }, 'body.to[0].recipientMail'],
      ['a missing recipientMail', { to: [{ recipientName: 'Ann' }] }, 'body.to[0].recipientMail'],
      ['a bad cc address', { cc: [{ recipientMail: 'ok@example.com' }, { recipientMail: 'a b@example.com' }] }, 'body.cc[1].recipientMail'],
      ['a bad bcc address', { bcc: [{ recipientMail: 'x@y' }] }, 'body.bcc[0].recipientMail'],
      ['an address with a CRLF', { to: [{ recipientMail: 'a@example.com\r\nRCPT TO:<b@example.com>' }] }, 'body.to[0].recipientMail'],
      ['an empty to', { to: [] }, 'body.to'],
      ['a missing to', { to: undefined }, 'body.to'],
      ['to as a string', { to: 'ann@example.com' }, 'body.to'],
      ['an unknown property', { priority: 'high' }, 'body.priority'],
      ['an unknown recipient property', { to: [{ recipientMail: 'ann@example.com', kind: 'to' }] }, 'body.to[0].kind'],
      ['a number as subject', { subject: 5 }, 'body.subject'],
      ['a missing subject', { subject: undefined }, 'body.subject'],
      ['a subject over 998 characters', { subject: 's'.repeat(999) }, 'body.subject'],
      ['a fromName over 200 characters', { fromName: 'n'.repeat(201) }, 'body.fromName'],
      ['a number as text', { text: 5 }, 'body.text'],
      ['an empty idempotencyKey', { idempotencyKey: '' }, 'body.idempotencyKey'],
      ['headers as a list', { headers: ['X-A: 1'] }, 'body.headers'],
      ['a number as header value', { headers: { 'X-A': 1 } }, 'body.headers.X-A'],
      ['a CR/LF in a header value', { headers: { 'X-A': 'v\r\nBcc: evil@x.test' } }, 'body.headers.X-A'],
      ['a bare LF in a header value', { headers: { 'X-A': 'v\nBcc: evil@x.test' } }, 'body.headers.X-A'],
      ['a bare CR in a header value', { headers: { 'X-A': 'v\rBcc: evil@x.test' } }, 'body.headers.X-A'],
      ['a CR/LF in a header name', { headers: { 'X-A\r\nBcc': 'evil@x.test' } }, 'body.headers.X-A'],
      ['a header name with a space', { headers: { 'Bad Name': 'v' } }, 'body.headers.Bad Name'],
      ['a header name with a colon', { headers: { 'X-A:B': 'v' } }, 'body.headers.X-A:B'],
      ['a non-ASCII header name', { headers: { 'X-Tëst': 'v' } }, 'body.headers.X-Tëst'],
      ['a CR/LF in the subject', { subject: 'Hello\r\nBcc: evil@x.test' }, 'body.subject'],
      ['a LF in the subject', { subject: 'Hello\nthere' }, 'body.subject'],
      ['a CR/LF in fromName', { fromName: 'Shop\r\nBcc: evil@x.test' }, 'body.fromName'],
      [
        'a CR/LF in a recipientName',
        { to: [{ recipientName: 'Ann\r\nBcc: evil@x.test', recipientMail: 'ann@example.com' }] },
        'body.to[0].recipientName',
      ],
      ['a LF in a cc recipientName', { cc: [{ recipientName: 'Carl\nX', recipientMail: 'carl@example.com' }] }, 'body.cc[0].recipientName'],
      ['a CR in a bcc recipientName', { bcc: [{ recipientName: 'Bo\rX', recipientMail: 'bo@example.com' }] }, 'body.bcc[0].recipientName'],
      ['a NUL in the subject', { subject: 'a\u0000b' }, 'body.subject'],
      // The SMTP smuggling shape: sent 7bit, it would reach the relay as <CR>.<CR><LF>.
      ['a bare CR in the text', { text: 'x\r.\r\nMAIL FROM:<a@x.test>\r\n' }, 'body.text'],
      ['a bare CR at the end of the text', { text: 'line\r' }, 'body.text'],
      ['a bare CR in the html', { html: '<p>a\rb</p>' }, 'body.html'],
    ])('refuses %s', async (_label, change, field) => {
      await expectBadRequest({ ...valid(), ...change }, field);
      expect((await list()).meta.total).toBe(0);
    });

    it('takes text and html with LF and CRLF line ends, and says what a bare CR is', async () => {
      const message = await expectBadRequest({ ...valid(), text: 'a\rb' }, 'body.text');
      expect(message).toBe('body.text must not contain a bare CR (a CR not followed by LF); end lines with LF or CRLF.');
      await submitOk({ ...valid(), text: 'one\ntwo\r\nthree\r\n', html: '<p>one</p>\r\n<p>two</p>\n' });
    });

    // The service writes these itself: taking them from the caller would forge the sender, leak Bcc, break
    // the MIME structure or the Message-ID fixed at acceptance. Refused, not silently dropped.
    it.each([
      'From',
      'to',
      'CC',
      'Bcc',
      'Subject',
      'Message-ID',
      'message-id',
      'Date',
      'MIME-Version',
      'Content-Type',
      'Content-Transfer-Encoding',
    ])('refuses the reserved header %s, naming it', async (name) => {
      const message = await expectBadRequest({ ...valid(), headers: { [name]: 'x@example.com' } }, `body.headers.${name}`);
      expect(message).toContain('set by Outbox');
    });

    it('lists every problem of the mail at once', async () => {
      const message = await expectBadRequest(
        { ...valid(), fromMail: 'bad', to: [{ recipientMail: 'also-bad' }], headers: { From: 'x' } },
        'body.fromMail',
      );
      expect(message).toContain('body.to[0].recipientMail');
      expect(message).toContain('body.headers.From');
    });

    it.each([
      ['a JSON string', '"hello"'],
      ['null', 'null'],
      ['a number', '42'],
      ['an empty body', ''],
    ])('refuses %s as the body', async (_label, payload) => {
      const response = await submit(payload);
      expect(response.statusCode).toBe(400);
      expect((response.json() as ErrorResponse).error.message).toMatch(/^body\b/);
    });

    it('refuses malformed JSON with 400 and keeps answering', async () => {
      const response = await submit('{"fromMail": "shop@example.com", "to": [');
      expect(response.statusCode).toBe(400);
      expect((response.json() as ErrorResponse).error.code).toBe('invalid_json');
      await submitOk(valid());
      expect((await list()).meta.total).toBe(1);
    });

    it('refuses a body over the limit with 413', async () => {
      const response = await submit({ ...valid(), text: 'x'.repeat(27 * 1024 * 1024) });
      expect(response.statusCode).toBe(413);
      expect((response.json() as ErrorResponse).error.code).toBe('payload_too_large');
      await submitOk(valid());
      expect((await list()).meta.total).toBe(1);
    });

    it('refuses a form body with 415', async () => {
      const response = await context.app.inject({
        method: 'POST',
        url: '/api/v1/mail',
        headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'fromMail=shop%40example.com',
      });
      expect(response.statusCode).toBe(415);
      expect((response.json() as ErrorResponse).error.code).toBe('unsupported_media_type');
    });
  });

  describe('authorisation', () => {
    it('answers 401 missing_api_key without Authorization', async () => {
      const response = await submit(valid(), null);
      expect(response.statusCode).toBe(401);
      expect((response.json() as ErrorResponse).error.code).toBe('missing_api_key');
    });

    it('answers 401 missing_api_key for another scheme', async () => {
      const response = await context.app.inject({
        method: 'POST',
        url: '/api/v1/mail',
        headers: { authorization: 'Basic c2hvcDpzZWNyZXQ=', 'content-type': 'application/json' },
        payload: valid(),
      });
      expect(response.statusCode).toBe(401);
      expect((response.json() as ErrorResponse).error.code).toBe('missing_api_key');
    });

    it('answers 401 for an unknown key', async () => {
      const response = await submit(valid(), 'obx_not-a-real-key');
      expect(response.statusCode).toBe(401);
      expect((response.json() as ErrorResponse).error.code).toBe('invalid_api_key');
    });

    it('answers 401 for a revoked key', async () => {
      await submitOk(valid());
      await context.services.auth.revokeApiKey('shop');
      const response = await submit(valid());
      expect(response.statusCode).toBe(401);
      expect((response.json() as ErrorResponse).error.code).toBe('invalid_api_key');
      expect((await list()).meta.total).toBe(1);
    });

    it('answers 401 at once to a revocation made elsewhere (the CLI, another instance): keys are never cached', async () => {
      await submitOk(valid());
      // What `apikey revoke` in another process does: the store changes, this process is not told.
      const revoked = await context.store.db
        .updateTable('api_keys')
        .set({ revoked_at: context.clock.now() })
        .where('name', '=', 'shop')
        .executeTakeFirst();
      expect(Number(revoked.numUpdatedRows)).toBe(1);
      const response = await submit(valid());
      expect(response.statusCode).toBe(401);
      expect((response.json() as ErrorResponse).error.code).toBe('invalid_api_key');
      expect((await list()).meta.total).toBe(1);
    });

    it('takes a new key at once, beside a key in use', async () => {
      await submitOk(valid());
      const second = await context.services.auth.createApiKey('shop-2');
      await submitOk(valid(), second);
    });

    it('does not let an operator token submit', async () => {
      const response = await submit(valid(), operatorToken);
      expect(response.statusCode).toBe(401);
      expect((response.json() as ErrorResponse).error.code).toBe('invalid_api_key');
      expect((await list()).meta.total).toBe(0);
    });

    it('checks the key before reading the body: no key and a bad or huge body is still 401', async () => {
      expect((await submit('{not json', null)).statusCode).toBe(401);
      expect((await submit('{not json', 'obx_unknown')).statusCode).toBe(401);
      expect((await submit({ ...valid(), text: 'x'.repeat(27 * 1024 * 1024) }, null)).statusCode).toBe(401);
    });

    it('lets an API key read its own mail (PRODUCT.md §8) but not dequeue, requeue or delete it (403)', async () => {
      const [mail] = await submitOk(valid());
      const id = mail!.id;
      const reads = [
        { method: 'GET', url: '/api/v1/mail/list' },
        { method: 'GET', url: `/api/v1/mail/${id}` },
        { method: 'GET', url: `/api/v1/mail/${id}/raw` },
      ] as const;
      for (const call of reads) {
        const response = await context.app.inject({ ...call, headers: { authorization: `Token ${apiKey}` } });
        expect(response.statusCode, `${call.method} ${call.url}`).toBe(200);
      }
      const actions = [
        { method: 'GET', url: `/api/v1/mail/${id}/dequeue` },
        { method: 'POST', url: `/api/v1/mail/${id}/dequeue` },
        { method: 'POST', url: `/api/v1/mail/${id}/requeue` },
        { method: 'DELETE', url: `/api/v1/mail/${id}` },
      ] as const;
      for (const call of actions) {
        const response = await context.app.inject({ ...call, headers: { authorization: `Token ${apiKey}` } });
        expect(response.statusCode, `${call.method} ${call.url}`).toBe(403);
      }
      const shown = await detail(id);
      expect(shown.status).toBe(0);
      expect(shown.events.map((e) => e.type)).toEqual(['accepted']);
    });
  });

  describe('idempotency', () => {
    it('returns the first mail for a key seen before, and stores one', async () => {
      const [first] = await submitOk({ ...valid(), idempotencyKey: 'order-42' });
      const second = await submit({ ...valid(), subject: 'a retry with other content', idempotencyKey: 'order-42' });
      expect(second.statusCode).toBe(202);
      const [again] = (second.json() as { data: MailBody[] }).data;
      expect(again).toEqual(first);
      const listed = await list();
      expect(listed.meta.total).toBe(1);
      expect(listed.meta.counts['0']).toBe(1);
      expect((await detail(first!.id)).events).toHaveLength(1);
    });

    it('keeps keys apart per API key', async () => {
      const otherKey = await context.services.auth.createApiKey('crm');
      const [first] = await submitOk({ ...valid(), idempotencyKey: 'order-42' });
      const [second] = await submitOk({ ...valid(), idempotencyKey: 'order-42' }, otherKey);
      expect(second!.id).not.toBe(first!.id);
      expect((await list()).meta.total).toBe(2);
    });

    it('makes one mail of the same key twice in one batch', async () => {
      const mails = await submitOk([
        { ...valid(), subject: 'a', idempotencyKey: 'k1' },
        { ...valid(), subject: 'b' },
        { ...valid(), subject: 'c', idempotencyKey: 'k1' },
      ]);
      expect(mails[0]!.id).toBe(mails[2]!.id);
      expect(mails[2]!.subject).toBe('a');
      expect(mails[1]!.id).not.toBe(mails[0]!.id);
      const listed = await list();
      expect(listed.meta.total).toBe(2);
      expect(listed.meta.counts['0']).toBe(2);
    });

    it('returns seen mails and creates new ones in a mixed batch, in order', async () => {
      const [seen] = await submitOk({ ...valid(), subject: 'seen', idempotencyKey: 'k1' });
      const mails = await submitOk([
        { ...valid(), subject: 'new', idempotencyKey: 'k2' },
        { ...valid(), subject: 'again', idempotencyKey: 'k1' },
      ]);
      expect(mails.map((m) => m.subject)).toEqual(['new', 'seen']);
      expect(mails[1]!.id).toBe(seen!.id);
      expect((await list()).meta.total).toBe(2);
    });

    it('makes one mail of two concurrent submissions with the same key', async () => {
      const [a, b] = await Promise.all([
        submit({ ...valid(), subject: 'one', idempotencyKey: 'race' }),
        submit({ ...valid(), subject: 'two', idempotencyKey: 'race' }),
      ]);
      expect([a!.statusCode, b!.statusCode]).toEqual([202, 202]);
      const idA = (a!.json() as { data: MailBody[] }).data[0]!.id;
      const idB = (b!.json() as { data: MailBody[] }).data[0]!.id;
      expect(idA).toBe(idB);
      const listed = await list();
      expect(listed.meta.total).toBe(1);
      expect(listed.meta.counts['0']).toBe(1);
    });

    it('makes one mail of many concurrent submissions with the same key, next to other mails', async () => {
      const responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) => submit(i % 2 ? { ...valid(), idempotencyKey: 'race' } : { ...valid(), subject: `plain ${i}` })),
      );
      expect(responses.map((r) => r.statusCode)).toEqual(Array(8).fill(202));
      const ids = responses.filter((_, i) => i % 2).map((r) => (r.json() as { data: MailBody[] }).data[0]!.id);
      expect(new Set(ids).size).toBe(1);
      expect((await list()).meta.total).toBe(5);
    });
  });
});
