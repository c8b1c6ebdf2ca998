/**
 * /api/v1/applications: operators create, list, rename, revoke and rotate applications (API
 * keys) through the app; the key is shown once; a revoked key, and an old key past its rotation's grace, submit
 * nothing (401); last use and the 24-hour count; refusals name the field; every change is audited without a key.
 */
import type { Application, ApplicationWithKey } from '@outbox/contract';
import { APPLICATION_MAIL_COUNT_CAP, MAX_ROTATION_GRACE_SECONDS } from '@outbox/contract';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countMailsSince } from '../../src/applications/application.repository.js';
import { API_KEY_USE_RECORD_MS } from '../../src/auth/auth.service.js';
import { auth, createTestContext, loginAs, testEngine, type TestContext } from '../support/context.js';

interface ErrorResponse {
  error: { code: string; message: string };
}

describe(`/api/v1/applications (${testEngine})`, () => {
  let context: TestContext;
  let token: string;
  beforeAll(async () => {
    context = await createTestContext();
  });
  beforeEach(async () => {
    token = await loginAs(context);
  });
  afterEach(() => context.reset());
  afterAll(() => context.close());

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown, withToken = token) =>
    context.app.inject({
      method,
      url,
      headers: auth(withToken),
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const create = async (name: string): Promise<ApplicationWithKey> => {
    const response = await call('POST', '/api/v1/applications', { name });
    expect(response.statusCode, response.body).toBe(201);
    return (response.json() as { data: ApplicationWithKey[] }).data[0]!;
  };
  const list = async (): Promise<Application[]> => {
    const response = await call('GET', '/api/v1/applications');
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { data: Application[] }).data;
  };
  const one = async (id: number): Promise<Application> => {
    const response = await call('GET', `/api/v1/applications/${id}`);
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { data: Application[] }).data[0]!;
  };
  const submit = (key: string) =>
    context.app.inject({
      method: 'POST',
      url: '/api/v1/mail',
      headers: { authorization: `Token ${key}`, 'content-type': 'application/json' },
      payload: { fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'Hello', text: 'Hi' },
    });
  const auditOf = async () => {
    const response = await call('GET', '/api/v1/audit?action=apikey');
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { data: Array<{ actor: string; action: string; target: string | null; before: unknown; after: unknown }> })
      .data;
  };
  const expectError = (response: { statusCode: number; body: string }, status: number, code: string, message?: RegExp) => {
    expect(response.statusCode, response.body).toBe(status);
    const { error } = JSON.parse(response.body) as ErrorResponse;
    expect(error.code).toBe(code);
    if (message) expect(error.message).toMatch(message);
  };

  it('creates an application whose key is shown once and submits mail; the list shows who made it, its last use and its mails', async () => {
    const created = await create('shop');
    expect(created.key).toMatch(/^obx_[A-Za-z0-9_-]{40,}$/);
    expect(created).toMatchObject({
      name: 'shop',
      createdBy: 'operator:ops',
      createdAt: new Date(context.clock.now()).toISOString(),
      lastUsedAt: null,
      revokedAt: null,
      previousKeyExpiresAt: null,
      mailsLast24h: 0,
      mailsLast24hIsLowerBound: false,
    });

    context.clock.advance(5_000);
    const usedAt = context.clock.now();
    expect((await submit(created.key)).statusCode).toBe(202);
    expect((await submit(created.key)).statusCode).toBe(202);

    const [listed] = await list();
    expect(listed).not.toHaveProperty('key');
    expect(listed).toMatchObject({ id: created.id, name: 'shop', lastUsedAt: new Date(usedAt).toISOString(), mailsLast24h: 2 });
    expect(JSON.stringify(await list())).not.toContain(created.key);
    expect(await one(created.id)).toEqual(listed);
  });

  it('writes the last use at most once a minute per key, not on every submission', async () => {
    const { id, key } = await create('shop');
    const first = context.clock.now();
    expect((await submit(key)).statusCode).toBe(202);
    context.clock.advance(API_KEY_USE_RECORD_MS - 1);
    expect((await submit(key)).statusCode).toBe(202);
    expect((await one(id)).lastUsedAt).toBe(new Date(first).toISOString());
    context.clock.advance(1);
    expect((await submit(key)).statusCode).toBe(202);
    expect((await one(id)).lastUsedAt).toBe(new Date(context.clock.now()).toISOString());
  });

  it('counts the mails of the last 24 hours only, each application its own', async () => {
    const shop = await create('shop');
    const crm = await create('crm');
    expect((await submit(shop.key)).statusCode).toBe(202);
    context.clock.advance(3_600_000);
    expect((await submit(shop.key)).statusCode).toBe(202);
    expect((await submit(crm.key)).statusCode).toBe(202);
    const counts = async () => {
      token = await loginAs(context); // a session lasts an hour here
      return Object.fromEntries((await list()).map((a) => [a.name, a.mailsLast24h]));
    };
    expect(await counts()).toEqual({ crm: 1, shop: 2 });
    // The first mail is 24 hours old: out of the window.
    context.clock.advance(23 * 3_600_000);
    expect(await counts()).toEqual({ crm: 1, shop: 1 });
    context.clock.advance(3_600_000);
    expect(await counts()).toEqual({ crm: 0, shop: 0 });
  });

  it('counts up to the cap and no further (the count reads at most cap + 1 index entries)', async () => {
    const { id, key } = await create('shop');
    for (let i = 0; i < 4; i++) expect((await submit(key)).statusCode).toBe(202);
    const since = context.clock.now() - 86_400_000;
    expect(await countMailsSince(context.store.db, id, since, 10)).toBe(4);
    expect(await countMailsSince(context.store.db, id, since, 2)).toBe(3);
    expect(APPLICATION_MAIL_COUNT_CAP).toBe(10_000);
  });

  it('renames an application; its key keeps working; a name in use is refused with 409', async () => {
    const shop = await create('shop');
    await create('crm');
    const renamed = await call('PATCH', `/api/v1/applications/${shop.id}`, { name: 'web-shop' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect((renamed.json() as { data: Application[] }).data[0]).toMatchObject({ id: shop.id, name: 'web-shop' });
    expect((await submit(shop.key)).statusCode).toBe(202);
    expectError(await call('PATCH', `/api/v1/applications/${shop.id}`, { name: 'crm' }), 409, 'application_exists', /crm/);
    expectError(await call('POST', '/api/v1/applications', { name: 'web-shop' }), 409, 'application_exists');
    expect((await list()).map((a) => a.name)).toEqual(['crm', 'web-shop']);
  });

  it('sets the lane at creation and by PATCH, and the content retention by PATCH; the mails follow; bad values name the field', async () => {
    const created = await call('POST', '/api/v1/applications', { name: 'news', lane: 'bulk' });
    expect(created.statusCode, created.body).toBe(201);
    const news = (created.json() as { data: ApplicationWithKey[] }).data[0]!;
    expect(news).toMatchObject({ lane: 'bulk', contentRetentionDays: null });
    const shop = await create('shop');
    expect(shop.lane).toBe('transactional');

    const submitted = async (key: string) => (JSON.parse((await submit(key)).body) as { data: Array<{ id: number }> }).data[0]!.id;
    const laneOfMail = async (id: number) =>
      ((await call('GET', `/api/v1/mail/${id}`)).json() as { data: Array<{ lane: string }> }).data[0]!.lane;
    expect(await laneOfMail(await submitted(news.key))).toBe('bulk');

    const patched = await call('PATCH', `/api/v1/applications/${shop.id}`, { lane: 'bulk', contentRetentionDays: 0 });
    expect(patched.statusCode, patched.body).toBe(200);
    expect((patched.json() as { data: Application[] }).data[0]).toMatchObject({ name: 'shop', lane: 'bulk', contentRetentionDays: 0 });
    expect(await laneOfMail(await submitted(shop.key))).toBe('bulk');
    const back = await call('PATCH', `/api/v1/applications/${shop.id}`, { contentRetentionDays: null, lane: 'transactional' });
    expect((back.json() as { data: Application[] }).data[0]).toMatchObject({ lane: 'transactional', contentRetentionDays: null });

    const audit = await auditOf();
    expect(audit.filter((entry) => entry.action === 'apikey.lane').map((entry) => entry.after)).toEqual([
      { id: shop.id, lane: 'transactional' },
      { id: shop.id, lane: 'bulk' },
    ]);
    expect(audit.filter((entry) => entry.action === 'apikey.content-retention')).toHaveLength(2);

    expectError(await call('PATCH', `/api/v1/applications/${shop.id}`, { lane: 'fast' }), 400, 'invalid_request', /lane/);
    expectError(
      await call('PATCH', `/api/v1/applications/${shop.id}`, { contentRetentionDays: 10_000 }),
      400,
      'invalid_content_retention',
      /contentRetentionDays/,
    );
    expectError(await call('PATCH', `/api/v1/applications/${shop.id}`, {}), 400, 'invalid_request');
    expectError(await call('PATCH', '/api/v1/applications/999999', { lane: 'bulk' }), 404, 'application_not_found');
  });

  it('revokes an application: its key is refused at once (401), it stays listed, a second revoke or a rotation is 409', async () => {
    const shop = await create('shop');
    expect((await submit(shop.key)).statusCode).toBe(202);
    context.clock.advance(1_000);
    const revoked = await call('POST', `/api/v1/applications/${shop.id}/revoke`);
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect((revoked.json() as { data: Application[] }).data[0]).toMatchObject({
      revokedAt: new Date(context.clock.now()).toISOString(),
      mailsLast24h: 1,
    });
    expectError(await submit(shop.key), 401, 'invalid_api_key');
    expectError(await call('POST', `/api/v1/applications/${shop.id}/revoke`), 409, 'application_revoked');
    expectError(await call('POST', `/api/v1/applications/${shop.id}/rotate`, {}), 409, 'application_revoked');
    expect((await list()).map((a) => [a.name, a.revokedAt !== null])).toEqual([['shop', true]]);
    // Its name is taken until it is renamed.
    expectError(await call('POST', '/api/v1/applications', { name: 'shop' }), 409, 'application_exists', /revoked/);
    expect((await call('PATCH', `/api/v1/applications/${shop.id}`, { name: 'shop-old' })).statusCode).toBe(200);
    expect((await create('shop')).name).toBe('shop');
  });

  it('rotates: the new key works at once, the old one until its grace ends and then 401', async () => {
    const shop = await create('shop');
    const rotated = await call('POST', `/api/v1/applications/${shop.id}/rotate`, { graceSeconds: 60 });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const withKey = (rotated.json() as { data: ApplicationWithKey[] }).data[0]!;
    expect(withKey.key).toMatch(/^obx_/);
    expect(withKey.key).not.toBe(shop.key);
    const expiresAt = context.clock.now() + 60_000;
    expect(withKey.previousKeyExpiresAt).toBe(new Date(expiresAt).toISOString());

    expect((await submit(withKey.key)).statusCode).toBe(202);
    context.clock.set(expiresAt - 1);
    expect((await submit(shop.key)).statusCode).toBe(202);
    context.clock.set(expiresAt);
    expectError(await submit(shop.key), 401, 'invalid_api_key');
    expect((await submit(withKey.key)).statusCode).toBe(202);
    const after = await one(shop.id);
    expect(after.previousKeyExpiresAt).toBeNull();
    // Both keys' mails are the application's.
    expect(after.mailsLast24h).toBe(3);
  });

  it('rotates with no grace (the old key stops at once), with the default grace of an hour, and a second rotation ends the first one’s old key', async () => {
    const shop = await create('shop');
    const now = await call('POST', `/api/v1/applications/${shop.id}/rotate`, { graceSeconds: 0 });
    expect(now.statusCode, now.body).toBe(200);
    const second = (now.json() as { data: ApplicationWithKey[] }).data[0]!;
    expect(second.previousKeyExpiresAt).toBeNull();
    expectError(await submit(shop.key), 401, 'invalid_api_key');

    const byDefault = await context.app.inject({
      method: 'POST',
      url: `/api/v1/applications/${shop.id}/rotate`,
      headers: { authorization: `Token ${token}` },
    });
    expect(byDefault.statusCode, byDefault.body).toBe(200);
    const third = (byDefault.json() as { data: ApplicationWithKey[] }).data[0]!;
    expect(third.previousKeyExpiresAt).toBe(new Date(context.clock.now() + 3_600_000).toISOString());
    expect((await submit(second.key)).statusCode).toBe(202);

    const again = await call('POST', `/api/v1/applications/${shop.id}/rotate`, { graceSeconds: MAX_ROTATION_GRACE_SECONDS });
    const fourth = (again.json() as { data: ApplicationWithKey[] }).data[0]!;
    expectError(await submit(second.key), 401, 'invalid_api_key');
    expect((await submit(third.key)).statusCode).toBe(202);
    expect((await submit(fourth.key)).statusCode).toBe(202);
    // Revoking ends the old key in its grace too.
    expect((await call('POST', `/api/v1/applications/${shop.id}/revoke`)).statusCode).toBe(200);
    expectError(await submit(third.key), 401, 'invalid_api_key');
    expectError(await submit(fourth.key), 401, 'invalid_api_key');
  });

  it('refuses bad input with 400 naming the field', async () => {
    expectError(await call('POST', '/api/v1/applications', {}), 400, 'invalid_request', /body\.name is required/);
    expectError(await call('POST', '/api/v1/applications', { name: '' }), 400, 'invalid_request', /body\.name/);
    expectError(await call('POST', '/api/v1/applications', { name: 'x'.repeat(65) }), 400, 'invalid_request', /body\.name/);
    expectError(await call('POST', '/api/v1/applications', { name: 'my shop' }), 400, 'invalid_name', /^name must be/);
    expectError(
      await call('POST', '/api/v1/applications', { name: 'shop', key: 'mine' }),
      400,
      'invalid_request',
      /body\.key is not an accepted field/,
    );
    const { id } = await create('shop');
    expectError(await call('PATCH', `/api/v1/applications/${id}`, { name: 42 }), 400, 'invalid_request', /body\.name must be string/);
    expectError(await call('PATCH', `/api/v1/applications/${id}`, { name: 'a/b' }), 400, 'invalid_name', /^name must be/);
    expectError(
      await call('POST', `/api/v1/applications/${id}/rotate`, { graceSeconds: 86_401 }),
      400,
      'invalid_request',
      /body\.graceSeconds/,
    );
    expectError(
      await call('POST', `/api/v1/applications/${id}/rotate`, { graceSeconds: -1 }),
      400,
      'invalid_request',
      /body\.graceSeconds/,
    );
    expectError(
      await call('POST', `/api/v1/applications/${id}/rotate`, { graceSeconds: 1.5 }),
      400,
      'invalid_request',
      /body\.graceSeconds/,
    );
    expectError(await call('GET', '/api/v1/applications/abc'), 400, 'invalid_request', /path\.id/);
    // Nothing changed.
    expect((await list()).map((a) => a.name)).toEqual(['shop']);
  });

  it('answers 404 for an unknown id', async () => {
    expectError(await call('GET', '/api/v1/applications/999'), 404, 'application_not_found', /999/);
    expectError(await call('PATCH', '/api/v1/applications/999', { name: 'x' }), 404, 'application_not_found');
    expectError(await call('POST', '/api/v1/applications/999/revoke'), 404, 'application_not_found');
    expectError(await call('POST', '/api/v1/applications/999/rotate', {}), 404, 'application_not_found');
  });

  it('is for operators only: no token 401, an API key 403', async () => {
    const { key } = await create('shop');
    expectError(await context.app.inject({ method: 'GET', url: '/api/v1/applications' }), 401, 'missing_token');
    expectError(await call('GET', '/api/v1/applications', undefined, 'not-a-token'), 401, 'invalid_token');
    expectError(await call('GET', '/api/v1/applications', undefined, key), 403, 'operator_only');
    expectError(await call('POST', '/api/v1/applications', { name: 'mine' }, key), 403, 'operator_only');
    expect((await list()).map((a) => a.name)).toEqual(['shop']);
  });

  it('writes every change to the audit log, never a key; the command line’s changes are the same actions', async () => {
    const shop = await create('shop');
    await call('PATCH', `/api/v1/applications/${shop.id}`, { name: 'web-shop' });
    const rotated = (await call('POST', `/api/v1/applications/${shop.id}/rotate`, { graceSeconds: 30 })).json() as {
      data: ApplicationWithKey[];
    };
    await call('POST', `/api/v1/applications/${shop.id}/revoke`);
    const cliKey = await context.services.auth.createApiKey('batch');
    await context.services.auth.revokeApiKey('batch');

    const entries = await auditOf();
    expect(entries.map((e) => [e.actor, e.action, e.target])).toEqual([
      ['cli', 'apikey.revoke', 'batch'],
      ['cli', 'apikey.create', 'batch'],
      ['operator:ops', 'apikey.revoke', 'web-shop'],
      ['operator:ops', 'apikey.rotate', 'web-shop'],
      ['operator:ops', 'apikey.rename', 'web-shop'],
      ['operator:ops', 'apikey.create', 'shop'],
    ]);
    expect(entries[4]).toMatchObject({ before: { id: shop.id, name: 'shop' }, after: { id: shop.id, name: 'web-shop' } });
    expect(entries[3]).toMatchObject({
      after: { id: shop.id, graceSeconds: 30, previousKeyExpiresAt: new Date(context.clock.now() + 30_000).toISOString() },
    });
    const text = JSON.stringify(entries);
    for (const key of [shop.key, rotated.data[0]!.key, cliKey]) expect(text).not.toContain(key);
    expect(text).not.toContain('obx_');
  });
});
