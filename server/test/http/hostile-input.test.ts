/**
 * Hostile input from the outside, on the engine under test: every request the audit
 * sent that answered 500 (PostgreSQL) or was read as something it is not (`0x10` as 16) now answers a 4xx with
 * the error shape, and every answer carrying mail data or a token says `Cache-Control: no-store`.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { auth, createTestContext, loginAs, makeTempDir, openTestStore, testEngine, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';

interface ErrorResponse {
  error: { code: string; message: string };
}

const cursorOf = (payload: unknown) => Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');

/** A 4xx with exactly the documented shape, never a 5xx. */
function expectErrorShape(response: { statusCode: number; body: string }, status: number): ErrorResponse {
  expect(response.statusCode, response.body).toBe(status);
  const body = JSON.parse(response.body) as ErrorResponse;
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message']);
  expect(body.error.code).toMatch(/^[a-z_]+$/);
  return body;
}

describe(`hostile input (${testEngine})`, () => {
  let context: TestContext;
  let token: string;
  let apiKey: string;
  let firstId: number;

  // One store for the whole file (a PostgreSQL database per test costs seconds): the tests run in order, and
  // only the Cache-Control ones at the end change mails.
  beforeAll(async () => {
    context = await createTestContext();
    token = await loginAs(context);
    apiKey = await context.services.auth.createApiKey('shop');
    firstId = (await seedMails(context.store, [{ subject: 'one', status: 5 }, { subject: 'two' }, { subject: 'three' }]))[0]!;
  });
  afterAll(() => context.close());

  const get = (url: string) => context.app.inject({ method: 'GET', url, headers: auth(token) });

  describe('mail ids are positive integers in plain decimal within the column range', () => {
    // Each was read as a number before: `0x10` as 16, `+1` and `1%0a` as 1, `1e400` as Infinity, and the
    // huge ones reached PostgreSQL's bigint and answered 500.
    it.each([
      '0x10',
      '+1',
      '1%0A',
      '%201',
      '1.0',
      '01',
      '1e0',
      '1e400',
      '99999999999999999999999',
      '9223372036854775808',
      '9007199254740992',
      '0',
      '-1',
      'abc',
    ])('answers 400 naming path.id for %s on every id route', async (id) => {
      const requests = [
        { method: 'GET', url: `/api/v1/mail/${id}` },
        { method: 'GET', url: `/api/v1/mail/${id}/raw` },
        { method: 'DELETE', url: `/api/v1/mail/${id}` },
        { method: 'GET', url: `/api/v1/mail/${id}/dequeue` },
        { method: 'POST', url: `/api/v1/mail/${id}/dequeue` },
        { method: 'POST', url: `/api/v1/mail/${id}/requeue` },
      ] as const;
      for (const request of requests) {
        const response = await context.app.inject({ ...request, headers: auth(token) });
        const body = expectErrorShape(response, 400);
        expect(body.error.message, `${request.method} ${request.url}`).toContain('path.id');
      }
    });

    it('still finds a mail by its plain id, and answers 404 for the largest id a client can name', async () => {
      expect((await get(`/api/v1/mail/${firstId}`)).statusCode).toBe(200);
      expectErrorShape(await get('/api/v1/mail/9007199254740991'), 404);
      expectErrorShape(await context.app.inject({ method: 'DELETE', url: '/api/v1/mail/9007199254740991', headers: auth(token) }), 404);
    });
  });

  describe('list query', () => {
    it.each(['1e400', '0x10', '+5', '5.0', ' 5', 'Infinity', '1e2'])('answers 400 for limit=%s', async (limit) => {
      const body = expectErrorShape(await get(`/api/v1/mail/list?limit=${encodeURIComponent(limit)}`), 400);
      expect(body.error.message).toContain('query.limit');
    });

    it('answers 400 naming query.q for a NUL in the search', async () => {
      const body = expectErrorShape(await get('/api/v1/mail/list?q=a%00b'), 400);
      expect(body.error.message).toContain('query.q');
    });

    it('answers 400 for an unknown query parameter, like an unknown body property', async () => {
      const body = expectErrorShape(await get('/api/v1/mail/list?limit=5&colour=red'), 400);
      expect(body.error.message).toBe('query.colour is not an accepted field.');
      expectErrorShape(await get(`/api/v1/mail/${firstId}?x=1`), 400);
      expectErrorShape(
        await context.app.inject({ method: 'POST', url: '/api/v1/login?debug=1', payload: { username: 'ops', password: 'x' } }),
        400,
      );
    });

    it.each([
      ['garbage', 'receivedDate', 'desc', 'not-a-cursor!'],
      ['not JSON', 'receivedDate', 'desc', Buffer.from('{{{').toString('base64url')],
      ['a string where a number belongs', 'receivedDate', 'desc', cursorOf(['receivedDate', 'desc', 'abc', 1, 'next'])],
      ['an id of 1e300', 'receivedDate', 'desc', cursorOf(['receivedDate', 'desc', 1, 1e300, 'next'])],
      ['a value of 1e300', 'receivedDate', 'desc', cursorOf(['receivedDate', 'desc', 1e300, 1, 'next'])],
      ['a float value', 'receivedDate', 'desc', cursorOf(['receivedDate', 'desc', 1.5, 1, 'next'])],
      ['a float id', 'receivedDate', 'desc', cursorOf(['receivedDate', 'desc', 1, 1.5, 'next'])],
      ['a negative id', 'receivedDate', 'desc', cursorOf(['receivedDate', 'desc', 1, -4, 'next'])],
      ['a number where a subject belongs', 'subject', 'asc', cursorOf(['subject', 'asc', 5, 1, 'next'])],
      ['a NUL in a subject', 'subject', 'asc', cursorOf(['subject', 'asc', 'a\u0000b', 1, 'next'])],
      ['a status of 99', 'status', 'asc', cursorOf(['status', 'asc', 99, 1, 'next'])],
      ['an object value', 'from', 'asc', cursorOf(['from', 'asc', { a: 1 }, 1, 'next'])],
      ['extra fields', 'receivedDate', 'desc', cursorOf(['receivedDate', 'desc', 1, 1, 'next', 'x'])],
    ])('answers 400 invalid_cursor for a forged cursor: %s', async (_name, sort, order, cursor) => {
      const body = expectErrorShape(await get(`/api/v1/mail/list?limit=2&sort=${sort}&order=${order}&cursor=${cursor}`), 400);
      expect(body.error.code).toBe('invalid_cursor');
    });

    it('still pages with the cursors it issues, on every sort', async () => {
      for (const sort of ['receivedDate', 'lastUpdate', 'providerSentDate', 'subject', 'status', 'from']) {
        const first = await get(`/api/v1/mail/list?limit=2&sort=${sort}`);
        expect(first.statusCode).toBe(200);
        const next = (first.json() as { meta: { nextCursor: string } }).meta.nextCursor;
        const second = await get(`/api/v1/mail/list?limit=2&sort=${sort}&cursor=${next}`);
        expect(second.statusCode, second.body).toBe(200);
        expect((second.json() as { data: unknown[] }).data).toHaveLength(1);
      }
    });
  });

  describe('NUL characters are refused with a 400 naming the field wherever text enters the store', () => {
    const valid = () => ({
      fromName: 'Shop',
      fromMail: 'shop@example.com',
      to: [{ recipientName: 'Ann', recipientMail: 'ann@example.com' }],
      subject: 'Your order',
      text: 'Thanks.',
    });
    const submit = (payload: unknown) =>
      context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(apiKey), payload: JSON.stringify(payload) });

    it.each([
      ['body.text', { ...valid(), text: 'a\u0000b' }],
      ['body.idempotencyKey', { ...valid(), idempotencyKey: 'k\u0000' }],
      ['body.subject', { ...valid(), subject: '\u0000' }],
      ['body.fromName', { ...valid(), fromName: 'S\u0000' }],
      ['body.html', { ...valid(), html: '<p>\u0000</p>' }],
      ['body.to[0].recipientName', { ...valid(), to: [{ recipientName: 'A\u0000', recipientMail: 'ann@example.com' }] }],
      ['body.headers.X-Tag', { ...valid(), headers: { 'X-Tag': 'a\u0000' } }],
      ['body[1].text', [valid(), { ...valid(), text: '\u0000' }]],
    ])('%s', async (field, payload) => {
      const body = expectErrorShape(await submit(payload), 400);
      expect(body.error.message).toContain(field);
      expect(body.error.message).toContain('NUL');
    });

    it.each([
      ['body.idempotencyKey', { ...valid(), idempotencyKey: '\udfff' }],
      ['body.subject', { ...valid(), subject: 'a\ud800b' }],
      ['body.text', { ...valid(), text: 'x\udc00' }],
    ])('an unpaired surrogate (not Unicode) in %s is refused the same way', async (field, payload) => {
      // JSON.stringify writes a lone surrogate as the escape \udfff, exactly as a hostile client would.
      const body = expectErrorShape(await submit(payload), 400);
      expect(body.error.message).toContain(field);
      expect(body.error.message).toContain('unpaired surrogates');
    });

    it('a NUL in a header name is refused too', async () => {
      const body = expectErrorShape(await submit({ ...valid(), headers: { 'X-\u0000': 'a' } }), 400);
      expect(body.error.message).toContain('body.headers');
    });

    it('a login name with a NUL answers 400, never 500, without credentials', async () => {
      const response = await context.app.inject({
        method: 'POST',
        url: '/api/v1/login',
        payload: { username: 'ops\u0000', password: 'x' },
      });
      const body = expectErrorShape(response, 400);
      expect(body.error.message).toContain('body.username');
    });

    it('nothing was stored by any of them, and the service still answers', async () => {
      await submit({ ...valid(), text: 'a\u0000b' });
      const list = await get('/api/v1/mail/list');
      expect((list.json() as { meta: { total: number } }).meta.total).toBe(3);
    });

    it('a surrogate pair (an emoji) is text like any other', async () => {
      expect((await submit({ ...valid(), subject: 'Your order \ud83d\udce6', idempotencyKey: 'emoji-\ud83d\ude00' })).statusCode).toBe(202);
    });
  });

  describe('prototype keys in JSON bodies (issue 24 item 5)', () => {
    it.each([
      ['a top-level __proto__', '{"__proto__":{"isAdmin":true},"username":"ops","password":"x"}'],
      ['an escaped __proto__', '{"\\u005f_proto__":{"x":1},"username":"ops","password":"x"}'],
      ['a nested constructor.prototype', '{"username":"ops","password":"x","a":{"constructor":{"prototype":{"x":1}}}}'],
    ])('refuses %s with 400 before any route reads it', async (_label, payload) => {
      const response = await context.app.inject({
        method: 'POST',
        url: '/api/v1/login',
        headers: { 'content-type': 'application/json' },
        payload,
      });
      const body = expectErrorShape(response, 400);
      expect(body.error).toEqual({
        code: 'forbidden_json_key',
        message: 'The request body has a "__proto__" key or a "constructor.prototype"; remove it.',
      });
    });

    it('refuses a __proto__ in a submission, and takes "constructor" as plain text', async () => {
      const payload = (headers: string) =>
        `{"fromMail":"shop@example.com","to":[{"recipientMail":"ann@example.net"}],"subject":"constructor","text":"__proto__","headers":${headers}}`;
      const post = (body: string) =>
        context.app.inject({
          method: 'POST',
          url: '/api/v1/mail',
          headers: { ...auth(apiKey), 'content-type': 'application/json' },
          payload: body,
        });
      expect(expectErrorShape(await post(payload('{"__proto__":{"X-A":"1"}}')), 400).error.code).toBe('forbidden_json_key');
      const accepted = await post(payload('{"X-Constructor":"constructor"}'));
      expect(accepted.statusCode, accepted.body).toBe(202);
    });
  });

  describe('Cache-Control: no-store on every answer with mail data or a token (item 8)', () => {
    it.each([
      ['the login answer', 'POST', '/api/v1/login', 'login'],
      ['the list', 'GET', '/api/v1/mail/list', 'token'],
      ['a detail', 'GET', '/api/v1/mail/:id', 'token'],
      ['a raw message', 'GET', '/api/v1/mail/:id/raw', 'token'],
      ['a dequeue', 'GET', '/api/v1/mail/:id2/dequeue', 'token'],
      ['a delete', 'DELETE', '/api/v1/mail/:id', 'token'],
      ['a submission', 'POST', '/api/v1/mail', 'key'],
      ['an error', 'GET', '/api/v1/mail/999', 'token'],
      ['a failed login', 'POST', '/api/v1/login', 'bad'],
    ] as const)('%s', async (_name, method, template, who) => {
      const url = template.replace(':id2', String(firstId + 1)).replace(':id', String(firstId));
      const payload =
        who === 'login'
          ? { username: 'ops', password: 'correct horse battery' }
          : who === 'bad'
            ? { username: 'ops', password: 'wrong' }
            : who === 'key'
              ? {
                  fromName: 'S',
                  fromMail: 's@example.com',
                  to: [{ recipientName: 'A', recipientMail: 'a@example.com' }],
                  subject: 's',
                  text: 't',
                }
              : undefined;
      const headers = who === 'token' ? auth(token) : who === 'key' ? auth(apiKey) : {};
      const response = await context.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
      expect(response.statusCode).toBeLessThan(500);
      expect(response.headers['cache-control']).toBe('no-store');
    });
  });
});

describe(`transport-level errors use the error shape (${testEngine})`, () => {
  let app: FastifyInstance;
  let port: number;
  let dispose: () => Promise<void>;
  let consoleDir: string;

  beforeAll(async () => {
    const dataDir = makeTempDir();
    consoleDir = path.join(dataDir, 'console');
    fs.mkdirSync(consoleDir);
    fs.writeFileSync(path.join(consoleDir, 'index.html'), '<!doctype html><title>x</title>');
    const opened = await openTestStore(dataDir);
    dispose = opened.dispose;
    ({ app } = await buildApp({ store: opened.store, consoleDir }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await app.close();
    await dispose();
  });

  const request = (urlPath: string, headers: Record<string, string> = {}) =>
    new Promise<{ statusCode: number; body: string; contentType: string | undefined }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: urlPath, headers }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, body, contentType: res.headers['content-type'] }));
      });
      req.on('error', reject);
      req.end();
    });

  it('answers 431 with the error shape for oversized headers', async () => {
    const response = await request('/healthz', { 'x-big': 'a'.repeat(20_000) });
    const body = expectErrorShape(response, 431);
    expect(body.error.code).toBe('headers_too_large');
    expect(response.contentType).toContain('application/json');
  });

  it.each(['/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2fetc%2fpasswd', '/a/..%5c..%5cetc'])(
    'answers 403 with the error shape for %s',
    async (urlPath) => {
      const body = expectErrorShape(await request(urlPath), 403);
      expect(body.error.code).toBe('forbidden_path');
    },
  );

  it('answers 400 with the error shape for a malformed URL', async () => {
    const body = expectErrorShape(await request('/%'), 400);
    expect(body.error.code).toBe('bad_url');
  });

  // Found by the 30-minute fuzz run: the parser's error on the bytes after an answered request
  // wrote a second answer into the first one's body.
  it('answers a malformed URL followed by stray bytes once, with one well-formed response', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () =>
        socket.write('GET /%zz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`^faU h'),
      );
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
    expect(raw.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 400']);
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { error: { code: string } };
    expect(body.error.code).toBe('bad_url');
  });

  it('still serves the console afterwards', async () => {
    expect((await request('/')).statusCode).toBe(200);
  });
});
