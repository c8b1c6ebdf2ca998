/** /api/v1/suppressions: add, list, search, paging, remove, CSV export and import, refusals, operators only, audit. */
import type { SuppressionImportResponse, SuppressionListResponse } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';

describe('/api/v1/suppressions', () => {
  let context: TestContext;
  let token: string;
  beforeAll(async () => {
    context = await createTestContext();
    token = await loginAs(context);
  });
  afterAll(() => context.close());

  const add = (body: unknown, withToken = token) =>
    context.app.inject({ method: 'POST', url: '/api/v1/suppressions', headers: auth(withToken), payload: JSON.stringify(body) });
  const list = async (query = ''): Promise<SuppressionListResponse> => {
    const response = await context.app.inject({ method: 'GET', url: `/api/v1/suppressions${query}`, headers: auth(token) });
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as SuppressionListResponse;
  };
  const remove = (address: string) =>
    context.app.inject({
      method: 'DELETE',
      url: `/api/v1/suppressions/${encodeURIComponent(address)}`,
      headers: { authorization: `Token ${token}` },
    });
  const importCsv = (csv: string) =>
    context.app.inject({
      method: 'POST',
      url: '/api/v1/suppressions/import',
      headers: { authorization: `Token ${token}`, 'content-type': 'text/csv' },
      payload: csv,
    });

  it('adds, lists newest first with paging, searches, removes, and audit-logs each change', async () => {
    const first = await add({ address: ' Alice@Example.COM ', note: 'asked by phone' });
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json()).toMatchObject({
      address: 'alice@example.com',
      reason: 'manual',
      note: 'asked by phone',
      createdBy: 'operator:ops',
    });
    context.clock.advance(1000);
    expect((await add({ address: 'bob+news@example.org', expiresAt: '2030-01-01T00:00:00Z' })).statusCode).toBe(201);
    context.clock.advance(1000);
    expect((await add({ address: 'carol@example.com' })).statusCode).toBe(201);
    // Again: refreshed, not duplicated.
    expect((await add({ address: 'CAROL@example.com', note: 'again' })).statusCode).toBe(200);

    const all = await list();
    expect(all.data.map((s) => s.address)).toEqual(['carol@example.com', 'bob+news@example.org', 'alice@example.com']);
    expect(all.data[1]!.expiresAt).toBe('2030-01-01T00:00:00.000Z');

    const page1 = await list('?limit=2');
    expect(page1.data.map((s) => s.address)).toEqual(['carol@example.com', 'bob+news@example.org']);
    const page2 = await list(`?limit=2&cursor=${page1.meta.nextCursor}`);
    expect(page2.data.map((s) => s.address)).toEqual(['alice@example.com']);
    expect(page2.meta.nextCursor).toBeNull();

    expect((await list('?q=EXAMPLE.com')).data.map((s) => s.address)).toEqual(['carol@example.com', 'alice@example.com']);
    expect((await list('?q=%2Bnews')).data.map((s) => s.address)).toEqual(['bob+news@example.org']);
    // LIKE's wildcards are searched for as text.
    expect((await list('?q=_')).data).toEqual([]);

    expect((await remove('Bob+News@example.org')).statusCode).toBe(204);
    const gone = await remove('bob+news@example.org');
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toMatchObject({ error: { code: 'suppression_not_found' } });
    expect((await list()).data.map((s) => s.address)).toEqual(['carol@example.com', 'alice@example.com']);

    const audit = await context.app.inject({ method: 'GET', url: '/api/v1/audit?action=suppression', headers: auth(token) });
    const actions = (audit.json() as { data: { action: string; target: string }[] }).data.map((e) => `${e.action} ${e.target}`);
    expect(actions).toEqual([
      'suppression.remove bob+news@example.org',
      'suppression.add carol@example.com',
      'suppression.add carol@example.com',
      'suppression.add bob+news@example.org',
      'suppression.add alice@example.com',
    ]);
  });

  it('refuses a bad address, a past or unreadable expiry and unknown fields with a 400 naming the field', async () => {
    for (const [body, code, field] of [
      [{ address: 'not-an-address' }, 'invalid_address', 'address'],
      [{ address: 'a b@example.com' }, 'invalid_address', 'address'],
      [{ address: '' }, 'invalid_address', 'address'],
      [{ address: 'x@example.com', expiresAt: '2020-01-01T00:00:00Z' }, 'invalid_expires_at', 'expiresAt'],
      [{ address: 'x@example.com', expiresAt: 'tomorrow' }, undefined, 'expiresAt'],
      [{ address: 'x@example.com', colour: 'red' }, undefined, 'colour'],
      [{}, undefined, 'address'],
    ] as const) {
      const response = await add(body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      if (code) expect(response.json()).toMatchObject({ error: { code } });
      expect(response.body).toContain(field);
    }
    expect((await list('?q=x@example.com')).data).toEqual([]);
    expect((await context.app.inject({ method: 'GET', url: '/api/v1/suppressions?cursor=zz', headers: auth(token) })).statusCode).toBe(400);
  });

  it('answers 401 without a token and 403 to an API key, on every route', async () => {
    const key = await context.services.auth.createApiKey('shop-suppression');
    for (const [method, url] of [
      ['GET', '/api/v1/suppressions'],
      ['POST', '/api/v1/suppressions'],
      ['DELETE', '/api/v1/suppressions/a%40example.com'],
      ['POST', '/api/v1/suppressions/import'],
    ] as const) {
      const asKey = await context.app.inject({ method, url, headers: { authorization: `Token ${key}` } });
      expect(asKey.statusCode, `${method} ${url}`).toBe(403);
      expect(asKey.json()).toMatchObject({ error: { code: 'operator_only' } });
      expect((await context.app.inject({ method, url })).statusCode).toBe(401);
    }
  });

  it('exports CSV (format=csv or Accept) and imports it back; an import counts added, updated and refused lines', async () => {
    const csvText = [
      'address,note,expiresAt',
      'dave@example.net,"bounced, twice",',
      'Erin@Example.net,,2031-05-01T00:00:00Z',
      'alice@example.com,updated by import,',
      'nobody,,',
      'frank@example.net,,2001-01-01T00:00:00Z',
      '',
    ].join('\r\n');
    const imported = await importCsv(csvText);
    expect(imported.statusCode, imported.body).toBe(200);
    const counts = imported.json() as SuppressionImportResponse;
    expect(counts.added).toBe(2);
    expect(counts.updated).toBe(1);
    expect(counts.refused).toEqual([
      { line: 5, address: 'nobody', reason: expect.stringContaining('address') as unknown as string },
      { line: 6, address: 'frank@example.net', reason: expect.stringContaining('expiresAt') as unknown as string },
    ]);

    const byQuery = await context.app.inject({
      method: 'GET',
      url: '/api/v1/suppressions?format=csv',
      headers: { authorization: `Token ${token}` },
    });
    const byAccept = await context.app.inject({
      method: 'GET',
      url: '/api/v1/suppressions',
      headers: { authorization: `Token ${token}`, accept: 'text/csv' },
    });
    expect(byQuery.statusCode).toBe(200);
    expect(byQuery.headers['content-type']).toMatch(/^text\/csv/);
    expect(byAccept.body).toBe(byQuery.body);
    const lines = byQuery.body.trim().split('\r\n');
    expect(lines[0]).toBe('address,reason,mailId,detail,note,createdBy,createdAt,expiresAt');
    expect(lines).toContainEqual(expect.stringMatching(/^dave@example\.net,manual,,,"bounced, twice",operator:ops,/));
    expect(lines.length - 1).toBe((await list()).data.length);

    // Round trip: the export, removed and imported again, gives the same addresses, notes and expiries.
    const before = (await list()).data;
    for (const s of before) expect((await remove(s.address)).statusCode).toBe(204);
    expect((await list()).data).toEqual([]);
    const again = await importCsv(byQuery.body);
    expect(again.json()).toMatchObject({ added: before.length, updated: 0, refused: [] });
    const after = (await list()).data;
    const key = (s: { address: string; note: string | null; expiresAt: string | null }) => `${s.address}|${s.note}|${s.expiresAt}`;
    expect(after.map(key).sort()).toEqual(before.map(key).sort());

    const notCsv = await context.app.inject({ method: 'POST', url: '/api/v1/suppressions/import', headers: auth(token), payload: '{}' });
    expect(notCsv.statusCode).toBe(400);
  });

  it('refuses an import of more than 100,000 lines while it reads them, without building a row for every line', async () => {
    const before = (await list('?limit=500')).data.length;
    // Just under the 16 MiB body limit: 8 M lines of two empty cells, each of which was once built as a row first.
    const body = ',\n'.repeat(8 * 1024 * 1024 - 16);
    const heapBefore = process.memoryUsage().heapUsed;
    const peakBefore = process.resourceUsage().maxRSS; // kilobytes, the highest this process has reached
    const refused = await importCsv(body);
    const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    const peakGrowth = (process.resourceUsage().maxRSS - peakBefore) * 1024;
    expect(refused.statusCode, refused.body).toBe(400);
    expect(refused.json()).toMatchObject({ error: { code: 'import_too_large', message: expect.stringContaining('100000') as unknown } });
    expect(heapGrowth).toBeLessThan(200 * 1024 * 1024);
    expect(peakGrowth).toBeLessThan(400 * 1024 * 1024);
    expect((await list('?limit=500')).data.length).toBe(before);

    // At the limit it still imports: 100,000 lines, every one refused by its reason, none lost.
    const atLimit = await importCsv('nobody,,\n'.repeat(100_000));
    expect(atLimit.statusCode, atLimit.body.slice(0, 300)).toBe(200);
    expect((atLimit.json() as SuppressionImportResponse).refused).toHaveLength(100_000);
  });
});
