/** GET /api/v1/audit: what is recorded (logins, failed logins, logouts, actions, bulk actions, API keys), paging, filters, CSV. */
import { MailStatus, type AuditEntry, type AuditResponse } from '@outbox/contract';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auth, createTestContext, loginAs, PASSWORD, type TestContext } from '../support/context.js';
import { insertAuditEntries } from '../../src/audit/audit.repository.js';
import { seedMails } from '../support/mails.js';

describe('GET /api/v1/audit', () => {
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

  const get = (query = '', headers: Record<string, string> = {}) =>
    context.app.inject({ method: 'GET', url: `/api/v1/audit${query}`, headers: { ...auth(token), ...headers } });
  const audit = async (query = ''): Promise<AuditResponse> => {
    const response = await get(query);
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as AuditResponse;
  };
  const post = (url: string, payload?: unknown, withToken = token) =>
    context.app.inject({
      method: 'POST',
      url,
      headers: auth(withToken),
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });

  it('records logins, failed logins, logouts, single and bulk actions and API key changes, newest first', async () => {
    const [a, b, c] = await seedMails(context.store, [
      { status: MailStatus.Queued },
      { status: MailStatus.Queued },
      { status: MailStatus.Processing },
    ]);
    expect((await post(`/api/v1/mail/${a}/dequeue`)).statusCode).toBe(200);
    const bulk = await post('/api/v1/mail/bulk', { action: 'dequeue', ids: [b, c] });
    expect(bulk.statusCode).toBe(200);
    const failed = await context.app.inject({
      method: 'POST',
      url: '/api/v1/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: 'ops', password: 'wrong' }),
    });
    expect(failed.statusCode).toBe(401);
    await context.services.auth.createApiKey('shop');
    await context.services.auth.revokeApiKey('shop');
    const second = await loginAs(context);
    expect((await post('/api/v1/logout', undefined, second)).statusCode).toBeLessThan(300);

    const { data } = await audit();
    const actions = data.map((e) => e.action);
    expect(actions).toEqual([
      'logout',
      'login',
      'apikey.revoke',
      'apikey.create',
      'login.failed',
      'mail.bulk.dequeue',
      'mail.dequeue',
      'login',
      'operator.add',
    ]);
    const byAction = (action: string) => data.find((e) => e.action === action)!;
    expect(byAction('login.failed')).toMatchObject({ actor: 'client:127.0.0.1', target: 'operator:ops' });
    expect(byAction('mail.dequeue')).toMatchObject({
      actor: 'operator:ops',
      target: `mail:${a}`,
      before: { status: 'Queued' },
      after: { status: 'Dequeued' },
    });
    expect(byAction('mail.bulk.dequeue')).toMatchObject({
      actor: 'operator:ops',
      before: { ids: [b, c] },
      after: { done: 1, skipped: [{ reason: 'processing', count: 1, ids: [c] }] },
    });
    expect(byAction('apikey.create').target).toBe('shop');
    expect(data[0]!.at).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('pages by keyset without gaps or repeats, and filters by operator, action prefix and time', async () => {
    const ids = await seedMails(
      context.store,
      Array.from({ length: 7 }, () => ({ status: MailStatus.Queued })),
    );
    for (const [i, id] of ids.entries()) {
      context.clock.advance(60_000);
      await post(`/api/v1/mail/${id}/dequeue`);
      if (i === 3) await post('/api/v1/mail/bulk', { action: 'delete', ids: [ids[0]] });
    }
    const other = await loginAs(context, 'kim');
    await post('/api/v1/mail/bulk', { action: 'requeue', ids: [ids[1]] }, other);

    const all = (await audit('?limit=500')).data;
    const seen: AuditEntry[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const body: AuditResponse = await audit(`?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      seen.push(...body.data);
      cursor = body.meta.nextCursor;
      if (!cursor) break;
    }
    expect(seen.map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect(new Set(seen.map((e) => e.id)).size).toBe(all.length);

    expect((await audit('?operator=kim')).data.map((e) => e.action)).toEqual(['mail.bulk.requeue', 'login']);
    expect((await audit('?action=mail.bulk')).data.map((e) => e.action)).toEqual(['mail.bulk.requeue', 'mail.bulk.delete']);
    expect((await audit('?action=mail.dequeue')).data).toHaveLength(7);
    // `mail` is a prefix of dotted actions only: `mailx` would not match, `mail` matches every mail action.
    expect((await audit('?action=mail')).data).toHaveLength(9);
    const start = Date.parse('2026-11-23T10:00:00Z');
    const window = (
      await audit(`?action=mail.dequeue&from=${new Date(start + 120_000).toISOString()}&to=${new Date(start + 240_000).toISOString()}`)
    ).data;
    expect(window.map((e) => e.target)).toEqual([`mail:${ids[2]}`, `mail:${ids[1]}`]);
  });

  it('records a failed login with an unknown name without the name typed (often a password in the wrong field)', async () => {
    const typed = 'Tr0ub4dor&3-typed-in-the-name-field';
    const failed = await context.app.inject({
      method: 'POST',
      url: '/api/v1/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: typed, password: 'wrong' }),
    });
    expect(failed.statusCode).toBe(401);
    const json = await get('?action=login.failed');
    expect(json.statusCode).toBe(200);
    expect((json.json() as AuditResponse).data).toEqual([
      expect.objectContaining({ actor: 'client:127.0.0.1', action: 'login.failed', target: null, after: { reason: 'unknown user name' } }),
    ]);
    for (const response of [await get(), json, await get('?format=csv')]) {
      expect(response.statusCode).toBe(200);
      expect(response.body).not.toContain(typed);
      expect(response.body).not.toContain('Tr0ub4dor');
    }
  });

  it('exports CSV with format=csv or Accept: text/csv, defusing cells a spreadsheet would run', async () => {
    const failed = await context.app.inject({
      method: 'POST',
      url: '/api/v1/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: '=HYPERLINK("http://x","y")', password: 'wrong' }),
    });
    expect(failed.statusCode).toBe(401);
    // A name a spreadsheet would read as a formula (operator names may start with - or @).
    await context.services.auth.addOperator('@SUM-1', PASSWORD);
    for (const response of [await get('?format=csv'), await get('', { accept: 'text/csv' })]) {
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/csv/);
      expect(response.headers['content-disposition']).toContain('attachment');
      const lines = response.body.trimEnd().split('\r\n');
      expect(lines[0]).toBe('id,at,actor,action,target,before,after');
      expect(lines).toHaveLength(5);
      expect(lines[1]).toMatch(/^\d+,2026-11-23T10:00:00.000Z,cli,operator.add,'@SUM-1,,$/);
      // The unknown name is not written; the reason is, quoted as a cell holding quotes is.
      expect(lines[2]).toMatch(/^\d+,[^,]+,client:127\.0\.0\.1,login\.failed,,,"\{""reason"":""unknown user name""\}"$/);
      expect(response.body).not.toContain('HYPERLINK');
      expect(lines[3]).toMatch(/^\d+,2026-11-23T10:00:00.000Z,operator:ops,login,,,$/);
    }
  });

  it('streams a CSV export of several pages page by page, every entry once, newest first (issue 24 item 5)', async () => {
    const count = 2_345;
    await insertAuditEntries(
      context.store.db,
      Array.from({ length: count }, (_, i) => ({
        at: Date.parse('2026-11-23T09:00:00Z') + i,
        actor: 'cli',
        action: 'apikey.create',
        target: `apikey:k${i}`,
      })),
    );
    const response = await get('?format=csv');
    expect(response.statusCode).toBe(200);
    // Sent as it is read: no length known up front.
    expect(response.headers['content-length']).toBeUndefined();
    expect(response.headers['transfer-encoding']).toBe('chunked');
    const lines = response.body.trimEnd().split('\r\n');
    expect(lines[0]).toBe('id,at,actor,action,target,before,after');
    const targets = lines
      .slice(1)
      .filter((line) => line.includes(',apikey.create,'))
      .map((line) => line.split(',')[4]);
    expect(targets).toEqual(Array.from({ length: count }, (_, i) => `apikey:k${count - 1 - i}`));
    const ids = lines.slice(1).map((line) => Number(line.split(',')[0]));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('answers 400 naming the field for a bad cursor, date, limit or unknown parameter; 401 without a token', async () => {
    const cases: Array<[string, string]> = [
      ['?cursor=abc', 'query.cursor'],
      ['?from=yesterday', 'query.from'],
      ['?from=2026-11-23T10:00:00Z&to=2026-11-23T09:00:00Z', 'query.to'],
      ['?limit=0', 'query.limit'],
      ['?limit=1e2', 'query.limit'],
      ['?format=xml', 'query.format'],
      ['?actor=ops', 'query.actor'],
    ];
    for (const [query, field] of cases) {
      const response = await get(query);
      expect(response.statusCode, query).toBe(400);
      expect((response.json() as { error: { message: string } }).error.message, query).toContain(field);
    }
    const anonymous = await context.app.inject({ method: 'GET', url: '/api/v1/audit' });
    expect(anonymous.statusCode).toBe(401);
  });
});
