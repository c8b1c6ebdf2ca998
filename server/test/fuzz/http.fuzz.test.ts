/**
 * Property-based fuzzing of every HTTP route on the engine under test: random and boundary
 * values for every field, query parameter, header and id, wrong types, huge and deeply nested bodies, unicode
 * edge cases, forged cursors, and raw requests over a real socket (Node's own HTTP parser answers some of
 * those before Fastify sees them). The property: no answer is ≥ 500, every 4xx is `{error:{code,message}}`,
 * and the server still answers afterwards. See fuzz-support.ts for the run's size and seed.
 */
import net from 'node:net';
import { MAIL_SORTS, MailStatus } from '@outbox/contract';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, loginAs, type TestContext } from '../support/context.js';
import { seedMails } from '../support/mails.js';
import {
  anyJson,
  boundaryNumbers,
  boundaryTexts,
  deeplyNested,
  FailureLog,
  fuzzParameters,
  fuzzTimeoutMs,
  hostileText,
  hostileValue,
  numberLikeText,
  type Answer,
} from './fuzz-support.js';

let context: TestContext;
let token: string;
let apiKey: string;
let ids: number[];
const log = new FailureLog();

beforeAll(async () => {
  context = await createTestContext();
  token = await loginAs(context);
  apiKey = await context.services.auth.createApiKey('fuzz');
  ids = await seedMails(
    context.store,
    Object.values(MailStatus).map((status) => ({ status })),
  );
});

afterAll(async () => {
  console.log(`HTTP fuzz: ${log.summary()}`);
  if (log.failures.size > 0) console.log(`HTTP fuzz found ${log.failures.size} distinct failures:\n${log.report()}`);
  await context?.close();
});

/** Percent-encodes every byte of the UTF-8 form (lone surrogates become U+FFFD), or passes printable ASCII raw. */
function urlPart(text: string, raw: boolean): string {
  if (raw && /^[\x21-\x7e]*$/.test(text) && !/[#?&=/]/.test(text)) return text;
  return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
}

/** Header values as a client can send them (no CR, LF or NUL: Node refuses those before sending). */
const headerSafe = (text: string) => text.replace(/[\r\n\u0000]/g, '').replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');

interface FuzzRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  payload?: string;
}

async function inject(route: string, request: FuzzRequest): Promise<void> {
  let response;
  try {
    response = await context.app.inject(request as InjectOptions);
  } catch (error) {
    // light-my-request builds a WHATWG URL first and refuses some paths a real client can send (`/\`, found by
    // the 30-minute run): nothing reached the server. Such paths go over a real socket in the raw test below.
    if ((error as { code?: string }).code === 'ERR_INVALID_URL') return;
    throw error;
  }
  const answer: Answer = { statusCode: response.statusCode, body: response.body, headers: response.headers };
  const { method, url, headers, payload } = request;
  log.check(route, `${method} ${url} headers=${JSON.stringify(headers ?? {})} body=${(payload ?? '').slice(0, 300)}`, answer);
}

/** One request of the bounce path's property: the route it counts under, and what is sent. */
interface FuzzRoute {
  route: string;
  method: string;
  url: string;
  payload?: string;
  contentType?: string;
}

const idRoutes = [
  ['GET', ''],
  ['GET', '/raw'],
  ['GET', '/remote-image'],
  ['DELETE', ''],
  ['GET', '/dequeue'],
  ['POST', '/dequeue'],
  ['POST', '/requeue'],
] as const;

const operator = () => ({ authorization: `Token ${token}`, 'content-type': 'application/json' });

async function stillAnswers(): Promise<boolean> {
  const response = await context.app.inject({ method: 'GET', url: '/healthz' });
  return response.statusCode === 200;
}

beforeEach(() => log.beginProperty());

/**
 * What every test here promises of the answers it got: some were checked, none was ≥ 500 or a 4xx without
 * {error:{code,message}}, and the server still answers. A bad answer is logged rather than thrown (see
 * fuzz-support.ts), so the test fails here, once, naming every kind of bad answer its run met.
 */
async function expectEveryAnswerSound(minimumChecked = 1): Promise<void> {
  const verdict = log.propertyVerdict();
  expect(verdict.checked).toBeGreaterThanOrEqual(minimumChecked);
  expect(verdict.failures, `distinct failures:\n${verdict.report}`).toBe(0);
  expect(await stillAnswers()).toBe(true);
}

const cursorForgery = fc
  .record({
    sort: fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...MAIL_SORTS) }, { weight: 1, arbitrary: hostileText }),
    order: fc.constantFrom('asc', 'desc', 'asc', 'desc', 'up'),
    value: fc.oneof(hostileValue, fc.double(), fc.constantFrom(1e300, -1e300, 2 ** 63, 1.5, '1e400', '')),
    id: fc.oneof(fc.constantFrom(1e300, 2 ** 63, 1.5, -1, 0, '1', null), fc.integer()),
    direction: fc.constantFrom('next', 'prev', 'next', 'prev', 'sideways'),
    extra: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  })
  .map(({ sort, order, value, id, direction, extra }) => ({
    sort,
    order,
    cursor: Buffer.from(JSON.stringify(extra ? [sort, order, value, id, direction, 1] : [sort, order, value, id, direction])).toString(
      'base64url',
    ),
  }));

describe('HTTP fuzz', () => {
  it(
    'GET /api/v1/mail/list: every query parameter, unknown ones, repeated ones and forged cursors',
    async () => {
      const parameterName = fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('status', 'q', 'sort', 'order', 'limit', 'cursor') },
        { weight: 1, arbitrary: hostileText },
      );
      const parameterValue = fc.oneof(
        hostileText,
        numberLikeText,
        fc.constantFrom(...MAIL_SORTS, 'asc', 'desc', '0', '0,4', '5', '6', '0,,1', ',', '0,1,2,3,4,5,0'),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(parameterName, parameterValue, fc.boolean()), { maxLength: 6 }),
          fc.option(cursorForgery),
          async (parameters, forged) => {
            const pairs = parameters.map(([name, value, raw]) => `${urlPart(name, raw)}=${urlPart(value, raw)}`);
            if (forged) pairs.push(`sort=${urlPart(forged.sort, false)}`, `order=${forged.order}`, `cursor=${forged.cursor}`, 'limit=2');
            // One failure per set of parameters present, so a forged cursor and a bad limit are told apart.
            const known = ['status', 'q', 'sort', 'order', 'limit', 'cursor'];
            const present = [...new Set(parameters.map(([name]) => (known.includes(name) ? name : 'unknown')))].sort().join(',');
            await inject(`GET /api/v1/mail/list (${forged ? 'forged cursor' : present})`, {
              method: 'GET',
              url: `/api/v1/mail/list?${pairs.join('&')}`,
              headers: operator(),
            });
            return stillAnswers();
          },
        ),
        fuzzParameters(1),
      );
      await expectEveryAnswerSound();
    },
    fuzzTimeoutMs,
  );

  it('boundary sweep: every boundary number and text in every list parameter, id, login field and submission field', async () => {
    const values = [...new Set([...boundaryNumbers, ...boundaryTexts])];
    const requests: Array<[string, FuzzRequest]> = [];
    // Raw where the value is printable ASCII (so `1%0a` and `0x10` arrive as written), encoded otherwise.
    for (const name of ['status', 'q', 'sort', 'order', 'limit', 'cursor', 'unknownParameter'])
      for (const value of values)
        requests.push([
          `GET /api/v1/mail/list (${name})`,
          { method: 'GET', url: `/api/v1/mail/list?${name}=${urlPart(value, true)}`, headers: { authorization: `Token ${token}` } },
        ]);
    // Forged cursors with a valid envelope (this sort and order), so the forged value and id reach the query.
    for (const sort of MAIL_SORTS)
      for (const value of ['abc', '', 1e300, -1e300, 1.5, 2 ** 63, '1e400', 0])
        for (const id of [1, 1e300, 1.5, 2 ** 63, -1])
          for (const direction of ['next', 'prev']) {
            const cursor = Buffer.from(JSON.stringify([sort, 'desc', value, id, direction])).toString('base64url');
            requests.push([
              'GET /api/v1/mail/list (forged cursor)',
              {
                method: 'GET',
                url: `/api/v1/mail/list?sort=${sort}&order=desc&limit=2&cursor=${cursor}`,
                headers: { authorization: `Token ${token}` },
              },
            ]);
          }
    // Every id route shares one id schema; three of them (a read, a delete, a state change) stand for all six.
    for (const [method, suffix] of [idRoutes[0], idRoutes[2], idRoutes[5]])
      for (const value of values)
        requests.push([
          `${method} /api/v1/mail/:id${suffix}`,
          { method, url: `/api/v1/mail/${urlPart(value, true) || '%20'}${suffix}`, headers: { authorization: `Token ${token}` } },
        ]);
    for (const value of values)
      requests.push([
        'POST /api/v1/login',
        {
          method: 'POST',
          url: '/api/v1/login',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ username: value, password: value }),
        },
      ]);
    const valid = { fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'sweep', text: 'x' };
    const fields: Array<(value: string) => object> = [
      (value) => ({ ...valid, fromMail: value }),
      (value) => ({ ...valid, fromName: value }),
      (value) => ({ ...valid, subject: value }),
      (value) => ({ ...valid, text: value }),
      (value) => ({ ...valid, html: value }),
      (value) => ({ ...valid, idempotencyKey: value }),
      (value) => ({ ...valid, to: [{ recipientMail: value }] }),
      (value) => ({ ...valid, to: [{ recipientMail: 'ann@example.net', recipientName: value }] }),
      (value) => ({ ...valid, headers: { 'X-Sweep': value } }),
      (value) => ({ ...valid, headers: { [value]: 'v' } }),
    ];
    for (const value of values)
      for (const make of fields)
        requests.push([
          'POST /api/v1/mail',
          {
            method: 'POST',
            url: '/api/v1/mail',
            headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/json' },
            payload: JSON.stringify(make(value)),
          },
        ]);
    // Twenty at a time, as concurrent clients would: accepted submissions then share durable commits (group
    // commit), which keeps the sweep's ~1,500 requests within the CI bound.
    for (let start = 0; start < requests.length; start += 20)
      await Promise.all(requests.slice(start, start + 20).map(([route, request]) => inject(route, request)));
    await expectEveryAnswerSound();
  }, 180_000);

  it(
    'every route with an id: GET, raw, DELETE, dequeue (GET and POST), requeue, with ids of every shape',
    async () => {
      const id = fc.oneof(
        numberLikeText,
        hostileText,
        fc.constantFrom(...ids.map(String)),
        fc.integer({ min: 1, max: 2 ** 53 }).map(String),
      );
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...idRoutes), id, fc.boolean(), async ([method, suffix], value, raw) => {
          const part = urlPart(value, raw) || '%20';
          await inject(`${method} /api/v1/mail/:id${suffix}`, {
            method,
            url: `/api/v1/mail/${part}${suffix}`,
            headers: method === 'POST' ? operator() : { authorization: `Token ${token}` },
          });
          return stillAnswers();
        }),
        fuzzParameters(2),
      );
      await expectEveryAnswerSound();
    },
    fuzzTimeoutMs,
  );

  it(
    'the bounce path and its neighbours: paged reads, reports, suppressions (and their CSV import), webhooks, with hostile ids, queries and bodies',
    async () => {
      const id = fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...ids.map(String)) },
        { weight: 1, arbitrary: numberLikeText },
        { weight: 1, arbitrary: hostileText },
      );
      const queryValue = fc.oneof(
        numberLikeText,
        hostileText,
        fc.constantFrom(...boundaryNumbers),
        cursorForgery.map((c) => c.cursor),
      );
      const query = fc
        .array(fc.tuple(fc.constantFrom('limit', 'cursor', 'matched', 'q', 'kind', 'reason', 'state', 'x'), queryValue), { maxLength: 4 })
        .map((pairs) => pairs.map(([name, value]) => `${name}=${urlPart(value, false)}`).join('&'));
      // Webhook targets that can never be reached from here: an endpoint is refused (private or not a URL) or,
      // if one were made, points at loopback's discard port. No traffic leaves the machine.
      const webhookBody = fc.record(
        {
          url: fc.oneof(hostileValue, fc.constantFrom('ftp://example.com/x', 'http://127.0.0.1:9/x', 'http://[::7f00:1]/x', 'not a url')),
          description: hostileValue,
          eventTypes: fc.oneof(fc.array(hostileText, { maxLength: 3 }), hostileValue),
          applicationId: hostileValue,
          enabled: hostileValue,
        },
        { requiredKeys: [] },
      );
      const suppressionBody = fc.record({ address: hostileValue, note: hostileValue, expiresAt: hostileValue }, { requiredKeys: [] });
      const csv = fc
        .tuple(
          fc.array(fc.tuple(fc.oneof(hostileText, fc.constant('ann@example.net')), hostileText, fc.oneof(numberLikeText, hostileText)), {
            maxLength: 6,
          }),
          fc.constantFrom('\n', '\r\n', '\r'),
        )
        .map(([rows, newline]) => rows.map((cells) => cells.join(',')).join(newline));
      const request = fc.oneof(
        fc.tuple(fc.constantFrom('events', 'bounces', 'webhook-deliveries'), id, query).map(([what, value, q]) => ({
          route: `GET /api/v1/mail/:id/${what}`,
          method: 'GET',
          url: `/api/v1/mail/${urlPart(value, true) || '%20'}/${what}?${q}`,
        })),
        fc.tuple(fc.constantFrom('', '/raw'), fc.option(id, { nil: undefined }), query).map(([suffix, value, q]) => ({
          route: value === undefined ? 'GET /api/v1/bounces' : `GET /api/v1/bounces/:id${suffix}`,
          method: 'GET',
          url: value === undefined ? `/api/v1/bounces?${q}` : `/api/v1/bounces/${urlPart(value, true) || '%20'}${suffix}?${q}`,
        })),
        query.map((q) => ({ route: 'GET /api/v1/suppressions', method: 'GET', url: `/api/v1/suppressions?${q}` })),
        suppressionBody.map((body) => ({
          route: 'POST /api/v1/suppressions',
          method: 'POST',
          url: '/api/v1/suppressions',
          payload: JSON.stringify(body),
        })),
        hostileText.map((address) => ({
          route: 'DELETE /api/v1/suppressions/:address',
          method: 'DELETE',
          url: `/api/v1/suppressions/${urlPart(address, true) || '%20'}`,
        })),
        csv.map((text) => ({
          route: 'POST /api/v1/suppressions/import',
          method: 'POST',
          url: '/api/v1/suppressions/import',
          payload: text,
          contentType: 'text/csv',
        })),
        webhookBody.map((body) => ({
          route: 'POST /api/v1/webhooks',
          method: 'POST',
          url: '/api/v1/webhooks',
          payload: JSON.stringify(body),
        })),
        fc
          .tuple(fc.constantFrom('PATCH', 'DELETE', 'GET'), fc.oneof(numberLikeText, hostileText), webhookBody)
          .map(([method, value, body]) => ({
            route: `${method} /api/v1/webhooks/:id`,
            method,
            url: `/api/v1/webhooks/${urlPart(value, true) || '%20'}`,
            ...(method === 'PATCH' ? { payload: JSON.stringify(body) } : {}),
          })),
        fc
          .tuple(fc.constantFrom('rotate-secret', 'test', 'deliveries', 'replay'), fc.oneof(numberLikeText, hostileText), query, anyJson)
          .map(([what, value, q, body]) => ({
            route: `${what === 'deliveries' ? 'GET' : 'POST'} /api/v1/webhooks/:id/${what}`,
            method: what === 'deliveries' ? 'GET' : 'POST',
            url: `/api/v1/webhooks/${urlPart(value, true) || '%20'}/${what}?${q}`,
            ...(what === 'deliveries' ? {} : { payload: JSON.stringify(body) }),
          })),
      );
      await fc.assert(
        fc.asyncProperty(request, async ({ route, method, url, payload, contentType }: FuzzRoute) => {
          await inject(route, {
            method,
            url,
            headers: {
              authorization: `Token ${token}`,
              ...(payload !== undefined ? { 'content-type': contentType ?? 'application/json' } : {}),
            },
            ...(payload !== undefined ? { payload } : {}),
          });
          return stillAnswers();
        }),
        fuzzParameters(9),
      );
      await expectEveryAnswerSound();
    },
    fuzzTimeoutMs,
  );

  it(
    'POST /api/v1/login: wrong types, unknown fields, NUL and unicode names, odd content types, any JSON',
    async () => {
      const body = fc.oneof(
        fc.record(
          { username: fc.oneof(hostileValue, fc.constant('ops')), password: hostileValue, extra: hostileValue },
          { requiredKeys: [] },
        ),
        anyJson,
      );
      const contentType = fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'application/json; charset=latin1',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        '',
      );
      await fc.assert(
        fc.asyncProperty(body, contentType, fc.boolean(), async (value, type, asText) => {
          const payload = asText ? String(JSON.stringify(value)).slice(0, -1) : JSON.stringify(value);
          await inject('POST /api/v1/login', {
            method: 'POST',
            url: '/api/v1/login',
            headers: type ? { 'content-type': type } : {},
            payload: payload ?? '',
          });
          return stillAnswers();
        }),
        fuzzParameters(3),
      );
      await expectEveryAnswerSound();
    },
    fuzzTimeoutMs,
  );

  it(
    'POST /api/v1/mail: every field hostile or of the wrong type, batches, unknown fields, headers, any JSON',
    async () => {
      const recipient = fc.oneof(
        fc.record(
          {
            recipientMail: fc.oneof(fc.constant('ann@example.net'), hostileValue),
            recipientName: hostileValue,
            extra: hostileValue,
          },
          { requiredKeys: ['recipientMail'] },
        ),
        hostileValue,
      );
      const mail = fc.record(
        {
          fromMail: fc.oneof(fc.constant('shop@example.com'), hostileValue),
          fromName: hostileValue,
          to: fc.oneof(fc.array(recipient, { minLength: 1, maxLength: 3 }), hostileValue),
          cc: fc.array(recipient, { maxLength: 2 }),
          bcc: fc.array(recipient, { maxLength: 2 }),
          subject: fc.oneof(fc.constant('hello'), hostileValue),
          text: hostileValue,
          html: hostileValue,
          headers: fc.oneof(fc.dictionary(hostileText, fc.oneof(hostileText, hostileValue), { maxKeys: 3 }), hostileValue),
          idempotencyKey: hostileValue,
          [`x${'y'.repeat(3)}`]: hostileValue,
        },
        { requiredKeys: [] },
      );
      const body = fc.oneof(
        { weight: 4, arbitrary: mail },
        { weight: 2, arbitrary: fc.array(mail, { maxLength: 3 }) },
        { weight: 1, arbitrary: anyJson },
      );
      const authorization = fc.oneof(
        { weight: 8, arbitrary: fc.constant(`Token ${apiKey}`) },
        { weight: 1, arbitrary: hostileText.map((t) => `Token ${headerSafe(t)}`) },
        { weight: 1, arbitrary: fc.constant(`Token ${token}`) },
      );
      await fc.assert(
        fc.asyncProperty(body, authorization, async (value, auth) => {
          await inject('POST /api/v1/mail', {
            method: 'POST',
            url: '/api/v1/mail',
            headers: { authorization: auth, 'content-type': 'application/json' },
            payload: JSON.stringify(value),
          });
          return stillAnswers();
        }),
        fuzzParameters(4),
      );
      await expectEveryAnswerSound();
    },
    fuzzTimeoutMs,
  );

  it(
    'every route with hostile Authorization, Content-Type and other headers, and unknown paths',
    async () => {
      const routes: Array<[string, string]> = [
        ['GET', '/api/v1/mail/list?limit=5'],
        ['GET', `/api/v1/mail/${ids[0]}`],
        ['GET', `/api/v1/mail/${ids[0]}/raw`],
        ['POST', `/api/v1/mail/${ids[1]}/requeue`],
        ['POST', '/api/v1/logout'],
        ['POST', '/api/v1/mail'],
        ['POST', '/api/v1/login'],
        ['GET', '/healthz'],
        ['GET', '/metrics'],
        ['GET', '/api/openapi.json'],
        ['GET', '/'],
        ['PUT', '/api/v1/mail/list'],
        ['PATCH', `/api/v1/mail/${ids[0]}`],
        ['OPTIONS', '/api/v1/mail/list'],
      ];
      const headerName = fc.constantFrom(
        'authorization',
        'content-type',
        'accept',
        'accept-encoding',
        'x-forwarded-for',
        'content-encoding',
        'origin',
      );
      const headerValue = fc.oneof(
        hostileText.map(headerSafe),
        fc.constantFrom(
          'Token',
          'Token ',
          'token x',
          'Bearer x',
          'Basic YTpi',
          `Token ${token} ${token}`,
          'gzip',
          'application/json; charset=utf-16',
        ),
      );
      const path = fc.oneof(
        fc.constantFrom(...routes),
        hostileText.map((text): [string, string] => ['GET', `/api/v1/${urlPart(text, false)}`]),
        hostileText.map((text): [string, string] => ['GET', `/${urlPart(text, true)}`]),
      );
      await fc.assert(
        fc.asyncProperty(
          path,
          fc.dictionary(headerName, headerValue, { maxKeys: 3 }),
          fc.option(anyJson),
          async ([method, url], headers, body) => {
            await inject(`${method} ${url.split('?')[0]!.replace(/\/\d+/, '/:id')}`, {
              method,
              url,
              headers,
              ...(body !== null && method !== 'GET' && method !== 'HEAD' ? { payload: JSON.stringify(body) } : {}),
            });
            return stillAnswers();
          },
        ),
        fuzzParameters(5),
      );
      await expectEveryAnswerSound();
    },
    fuzzTimeoutMs,
  );

  it('huge and deeply nested bodies', async () => {
    const submit = (payload: string, url = '/api/v1/mail', authorization = `Token ${apiKey}`) =>
      inject(`POST ${url}`, { method: 'POST', url, headers: { authorization, 'content-type': 'application/json' }, payload });
    await submit(`"${'x'.repeat(27 * 1024 * 1024)}"`);
    await submit(
      JSON.stringify({
        fromMail: 'shop@example.com',
        to: [{ recipientMail: 'a@example.net' }],
        subject: 's',
        text: 'x'.repeat(2 * 1024 * 1024),
      }),
    );
    await submit(
      JSON.stringify(
        Array.from({ length: 501 }, () => ({ fromMail: 'shop@example.com', to: [{ recipientMail: 'a@example.net' }], subject: 's' })),
      ),
    );
    await submit(
      JSON.stringify({
        fromMail: 'shop@example.com',
        to: Array.from({ length: 101 }, () => ({ recipientMail: 'a@example.net' })),
        subject: 's',
      }),
    );
    for (const depth of [100, 10_000, 100_000]) {
      await submit(deeplyNested(depth, 'array'));
      await submit(deeplyNested(depth, 'object'));
      await inject('POST /api/v1/login', {
        method: 'POST',
        url: '/api/v1/login',
        headers: { 'content-type': 'application/json' },
        payload: deeplyNested(depth, 'object'),
      });
    }
    await inject('POST /api/v1/login', {
      method: 'POST',
      url: '/api/v1/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: 'x'.repeat(100_000), password: 'y' }),
    });
    await inject('GET /api/v1/mail/list', { method: 'GET', url: `/api/v1/mail/list?q=${'a'.repeat(100_000)}`, headers: operator() });
    await expectEveryAnswerSound();
  }, 120_000);

  it(
    'raw requests over a real socket: malformed request lines, paths, header bytes, huge headers',
    async () => {
      await context.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (context.app.server.address() as net.AddressInfo).port;
      const method = fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'OPTIONS', 'TRACE', 'CONNECT', 'FOO', 'G\u0000T', '');
      const target = fc.oneof(
        fc.constantFrom(
          '/api/v1/mail/list',
          `/api/v1/mail/${ids[0]}`,
          '/api/v1/../../etc/passwd',
          '/%2e%2e/%2e%2e/etc/passwd',
          '/assets/../../../etc/passwd',
          '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
          '//',
          '*',
          'http://evil.example/',
          '/%',
          '/%zz',
          '/%00',
          '/\\',
          '/\\..\\..\\etc\\passwd',
          '/api/v1/mail/list?limit=%',
        ),
        fc.string({ unit: 'binary-ascii', maxLength: 30 }).map((s) => `/${s.replace(/[\s]/g, '')}`),
      );
      const headerLine = fc.oneof(
        fc.constantFrom(
          `Authorization: Token ${token}`,
          'Content-Type: application/json',
          'Content-Length: 5',
          'Content-Length: -1',
          'Content-Length: 1e400',
          'Transfer-Encoding: chunked',
          'Transfer-Encoding: gzip, chunked',
          'Host:',
          'X: \u0001',
          ': empty name',
          'No-Colon',
          `X-Long: ${'a'.repeat(20_000)}`,
          `Cookie: ${'c=1; '.repeat(5_000)}`,
        ),
        fc
          .tuple(fc.string({ unit: 'binary-ascii', maxLength: 10 }), fc.string({ unit: 'binary', maxLength: 20 }))
          .map(([n, v]) => `${n.replace(/[\r\n:]/g, '')}: ${v.replace(/[\r\n]/g, '')}`),
      );
      await fc.assert(
        fc.asyncProperty(
          method,
          target,
          fc.array(headerLine, { maxLength: 4 }),
          fc.string({ maxLength: 50 }),
          async (verb, path, headers, body) => {
            const request = `${verb} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map((h) => `${h}\r\n`).join('')}Connection: close\r\n\r\n${body}`;
            const answer = await rawRequest(port, request);
            if (answer) log.check('raw HTTP request', JSON.stringify(request).slice(0, 600), answer);
            return stillAnswers();
          },
        ),
        fuzzParameters(6),
      );
      // Node drops some raw requests without an answer (a CONNECT nobody handles): a short run may check none.
      await expectEveryAnswerSound(0);
    },
    fuzzTimeoutMs,
  );

  it('the server still answers, and no answer was ≥ 500 or a 4xx without {error:{code,message}}', async () => {
    expect(await stillAnswers()).toBe(true);
    const list = await context.app.inject({ method: 'GET', url: '/api/v1/mail/list?limit=5', headers: operator() });
    expect(list.statusCode).toBe(200);
    expect(log.checked).toBeGreaterThan(0);
    expect(log.failures.size, `distinct failures:\n${log.report()}`).toBe(0);
  });
});

/** Sends bytes as they are and reads the answer until the server closes (or 3 s). Undefined if nothing came. */
function rawRequest(port: number, request: string): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (!match) return resolve(undefined);
      const split = text.indexOf('\r\n\r\n');
      const head = text.slice(0, split);
      let body = split === -1 ? '' : text.slice(split + 4);
      if (/transfer-encoding: chunked/i.test(head)) body = body.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n\r\n$/, '');
      resolve({ statusCode: Number(match[1]), body, headers: {} });
    };
    const timer = setTimeout(finish, 3000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', finish);
    socket.on('error', finish);
    socket.write(request, 'latin1');
  });
}
