/**
 * The security headers (http/security-headers.ts): computed once from helmet at start-up, and the same on every
 * kind of answer, errors included. Engine-neutral: it runs in the SQLite half only (vitest.config.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, loginAs, type TestContext } from '../support/context.js';

const EXPECTED = {
  'content-security-policy':
    "default-src 'self';base-uri 'none';font-src 'self';form-action 'self';frame-ancestors 'none';img-src 'self' data:;" +
    "object-src 'none';script-src 'self';script-src-attr 'none';style-src 'self';connect-src 'self'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

describe('security headers', () => {
  let context: TestContext;
  let token: string;
  beforeAll(async () => {
    context = await createTestContext();
    token = await loginAs(context);
  });
  afterAll(() => context.close());

  it('are the same on a success, a 404, a 400 for a bad parameter or body, a 401 and the API reference, without HSTS', async () => {
    const answers = {
      health: { method: 'GET', url: '/healthz' },
      list: { method: 'GET', url: '/api/v1/mail/list', headers: { authorization: `Token ${token}` } },
      badParameter: { method: 'GET', url: '/api/v1/mail/list?limit=abc', headers: { authorization: `Token ${token}` } },
      badBody: { method: 'POST', url: '/api/v1/login', headers: { 'content-type': 'application/json' }, payload: '{' },
      unauthenticated: { method: 'GET', url: '/api/v1/mail/list' },
      missing: { method: 'GET', url: '/no/such/page' },
      reference: { method: 'GET', url: '/api/docs' },
    } as const;
    const statuses: Record<string, number> = {};
    for (const [name, request] of Object.entries(answers)) {
      const response = await context.app.inject(request);
      statuses[name] = response.statusCode;
      expect(response.headers, name).toMatchObject(EXPECTED);
      expect(response.headers, name).not.toHaveProperty('strict-transport-security');
      expect(response.headers, name).not.toHaveProperty('cross-origin-embedder-policy');
      expect(response.headers, name).not.toHaveProperty('x-powered-by');
    }
    expect(statuses).toEqual({
      health: 200,
      list: 200,
      badParameter: 400,
      badBody: 400,
      unauthenticated: 401,
      missing: 404,
      reference: 200,
    });
  });
});
