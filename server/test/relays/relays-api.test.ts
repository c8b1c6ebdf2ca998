/**
 * Named relays and routes through the HTTP API (docs/relays.md, docs/api.md#relays-and-routes): CRUD, the checks
 * (400 naming the field, 404, 409), the audit entries, and the login that is never shown again: not in an answer,
 * not in the audit log, not in an export.
 */
import type { Relay, Route } from '@outbox/contract';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { exportStore } from '../../src/store/transfer.js';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';

let context: TestContext;
let token: string;
const SECRET = 'pa$$-w0rd-never-shown';

beforeAll(async () => {
  context = await createTestContext();
});
afterAll(async () => {
  await context.close();
});
beforeEach(async () => {
  await context.reset();
  token = await loginAs(context);
});

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT', url: string, payload?: unknown) =>
  context.app.inject({ method, url, headers: auth(token), ...(payload === undefined ? {} : { payload: payload as object }) });
const errorOf = (response: { json(): unknown }) => (response.json() as { error: { code: string; message: string } }).error;

async function createRelay(body: object): Promise<Relay> {
  const response = await call('POST', '/api/v1/relays', body);
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { data: Relay[] }).data[0]!;
}

describe('relays API', () => {
  it('creates, lists, changes and removes a relay; its login is taken out of the URL and never answered', async () => {
    const relay = await createRelay({
      name: 'eu-primary',
      url: `smtps://mailer:${encodeURIComponent(SECRET)}@smtp.eu.example:465`,
      maxConnections: 8,
      maxPerSecond: 20,
      maxPerDay: 100000,
    });
    expect(relay).toMatchObject({
      name: 'eu-primary',
      url: 'smtps://smtp.eu.example:465',
      tls: 'require',
      hasCredentials: true,
      maxConnections: 8,
      maxPerSecond: 20,
      maxPerDay: 100000,
    });
    // Loopback without a login: opportunistic, as RELAY_TLS's default.
    const local = await createRelay({ name: 'local', url: 'smtp://127.0.0.1:2525' });
    expect(local).toMatchObject({ tls: 'opportunistic', hasCredentials: false, maxConnections: 5, maxPerSecond: null, maxPerDay: null });

    const list = await call('GET', '/api/v1/relays');
    expect(list.statusCode).toBe(200);
    expect((list.json() as { data: Relay[] }).data.map((r) => r.name)).toEqual(['eu-primary', 'local']);
    expect(list.body).not.toContain(SECRET);
    expect(list.body).not.toContain('mailer');

    const changed = await call('PATCH', `/api/v1/relays/${local.id}`, {
      name: 'local-2',
      credentials: { username: 'u', password: SECRET },
      tls: 'require',
      maxPerSecond: null,
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect((changed.json() as { data: Relay[] }).data[0]).toMatchObject({ name: 'local-2', hasCredentials: true, tls: 'require' });
    expect(changed.body).not.toContain(SECRET);
    const removedLogin = await call('PATCH', `/api/v1/relays/${local.id}`, { credentials: null });
    expect((removedLogin.json() as { data: Relay[] }).data[0]!.hasCredentials).toBe(false);

    const one = await call('GET', `/api/v1/relays/${relay.id}`);
    expect((one.json() as { data: Relay[] }).data[0]!.name).toBe('eu-primary');

    expect((await call('DELETE', `/api/v1/relays/${local.id}`)).statusCode).toBe(204);
    expect((await call('GET', `/api/v1/relays/${local.id}`)).statusCode).toBe(404);
    expect(errorOf(await call('DELETE', `/api/v1/relays/${local.id}`)).code).toBe('relay_not_found');
    expect((await call('PATCH', '/api/v1/relays/999', { maxConnections: 2 })).statusCode).toBe(404);

    // The audit log says what changed, never the login.
    const audit = await call('GET', '/api/v1/audit?action=relay');
    expect(audit.statusCode).toBe(200);
    const actions = (audit.json() as { data: Array<{ action: string }> }).data.map((e) => e.action);
    expect(actions.filter((a) => a === 'relay.create')).toHaveLength(2);
    expect(actions.filter((a) => a === 'relay.update')).toHaveLength(2);
    expect(actions).toContain('relay.delete');
    expect(audit.body).toContain('credentialsChanged');
    expect(audit.body).not.toContain(SECRET);

    // An export carries the relays, not their logins (relay_credentials stays behind).
    const lines: string[] = [];
    await exportStore(context.store, async (line) => {
      lines.push(line);
    });
    const exported = lines.join('\n');
    expect(lines.some((line) => line.includes('"table":"relays"') && line.includes('eu-primary'))).toBe(true);
    expect(exported).not.toContain(SECRET);
    expect(exported).not.toContain('relay_credentials');
  });

  it('refuses bad input naming the field, a taken name with 409, and a relay a route names with 409', async () => {
    const cases: Array<[object, string]> = [
      [{ name: 'x', url: 'http://relay.example' }, 'body.url must start with smtp:// or smtps://.'],
      [{ name: 'x', url: 'not a url' }, 'body.url must be a URL such as smtp://relay.example.com:587.'],
      [{ name: 'x', url: 'smtp://relay.example/path' }, 'body.url must be scheme, host and port only (no path or query).'],
      [{ name: 'default', url: 'smtp://relay.example' }, 'body.name may not be "default": routes use it for RELAY_URL.'],
      [{ name: 'bad name', url: 'smtp://relay.example' }, 'body.name must be 1 to 64 letters, digits or . _ -.'],
      [
        { name: 'x', url: 'smtps://relay.example', tls: 'off' },
        'body.tls may not be off for an smtps:// relay, which is TLS from the first byte.',
      ],
      [
        { name: 'x', url: 'smtp://a:b@relay.example', credentials: { username: 'a', password: 'b' } },
        'body.credentials and a login in body.url were both given; give one.',
      ],
    ];
    for (const [body, message] of cases) {
      const response = await call('POST', '/api/v1/relays', body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(errorOf(response).message).toBe(message);
    }
    const schema = await call('POST', '/api/v1/relays', { name: 'x', url: 'smtp://relay.example', maxConnections: 0 });
    expect(schema.statusCode).toBe(400);
    expect(errorOf(schema).message).toContain('body.maxConnections');
    const tls = await call('POST', '/api/v1/relays', { name: 'x', url: 'smtp://relay.example', tls: 'sometimes' });
    expect(errorOf(tls).message).toContain('body.tls');
    expect((await call('PATCH', '/api/v1/relays/1', {})).statusCode).toBe(400);

    const relay = await createRelay({ name: 'eu', url: 'smtp://relay.example' });
    const taken = await call('POST', '/api/v1/relays', { name: 'eu', url: 'smtp://other.example' });
    expect(taken.statusCode).toBe(409);
    expect(errorOf(taken).code).toBe('relay_exists');

    expect((await call('PUT', '/api/v1/routes', { routes: [{ match: {}, relays: ['eu'] }] })).statusCode).toBe(200);
    const inUse = await call('DELETE', `/api/v1/relays/${relay.id}`);
    expect(inUse.statusCode).toBe(409);
    expect(errorOf(inUse)).toEqual({ code: 'relay_in_use', message: 'Relay eu is named by route 0; change the routes first.' });
  });

  it('replaces the ordered routes at once, names each bad field, and audits the change', async () => {
    await createRelay({ name: 'eu', url: 'smtp://eu.example' });
    await createRelay({ name: 'us', url: 'smtp://us.example' });
    const key = await context.services.auth.createApiKey('shop');
    const shop = (await context.services.auth.findApiKeyPrincipal(key))!;
    const body = {
      routes: [
        { match: { application: shop.id, lane: 'bulk' }, relays: ['us', 'eu'] },
        { match: { senderDomain: 'Shop.Example.', recipientDomain: '*.de' }, relays: ['eu', 'default'] },
        { match: {}, relays: ['default'] },
      ],
    };
    const put = await call('PUT', '/api/v1/routes', body);
    expect(put.statusCode, put.body).toBe(200);
    const routes = (await call('GET', '/api/v1/routes')).json() as { data: Route[] };
    expect(routes.data.map(({ position, match, relays }) => ({ position, match, relays }))).toEqual([
      { position: 0, match: { application: shop.id, senderDomain: null, recipientDomain: null, lane: 'bulk' }, relays: ['us', 'eu'] },
      {
        position: 1,
        match: { application: null, senderDomain: 'shop.example', recipientDomain: '*.de', lane: null },
        relays: ['eu', 'default'],
      },
      { position: 2, match: { application: null, senderDomain: null, recipientDomain: null, lane: null }, relays: ['default'] },
    ]);

    const bad: Array<[object, string]> = [
      [{ routes: [{ match: {}, relays: ['eu', 'nowhere'] }] }, 'body.routes[0].relays[1] names no relay: nowhere.'],
      [
        {
          routes: [
            { match: {}, relays: ['eu'] },
            { match: { senderDomain: 'not a domain' }, relays: ['eu'] },
          ],
        },
        'body.routes[1].match.senderDomain must be a domain such as example.com or *.example.com.',
      ],
      [
        { routes: [{ match: { recipientDomain: 'a.*.de' }, relays: ['eu'] }] },
        'body.routes[0].match.recipientDomain must be a domain such as example.com or *.example.com.',
      ],
      [{ routes: [{ match: { application: 4242 }, relays: ['eu'] }] }, 'body.routes[0].match.application names no application: 4242.'],
      [{ routes: [{ match: {}, relays: ['eu', 'eu'] }] }, 'body.routes[0].relays names a relay twice.'],
    ];
    for (const [payload, message] of bad) {
      const response = await call('PUT', '/api/v1/routes', payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(errorOf(response).message).toBe(message);
    }
    const empty = await call('PUT', '/api/v1/routes', { routes: [{ match: {}, relays: [] }] });
    expect(empty.statusCode).toBe(400);
    expect(errorOf(empty).message).toBe('body.routes[0].relays must NOT have fewer than 1 items.');
    // Refused lists changed nothing.
    expect(((await call('GET', '/api/v1/routes')).json() as { data: Route[] }).data).toHaveLength(3);

    const audit = await call('GET', '/api/v1/audit?action=routes.replace');
    expect((audit.json() as { data: unknown[] }).data).toHaveLength(1);
    expect(audit.body).toContain('shop.example');

    expect((await call('PUT', '/api/v1/routes', { routes: [] })).statusCode).toBe(200);
    expect(((await call('GET', '/api/v1/routes')).json() as { data: Route[] }).data).toEqual([]);
  });

  it('is for operators only: an API key gets 403', async () => {
    const key = await context.services.auth.createApiKey('app');
    for (const [method, url] of [
      ['GET', '/api/v1/relays'],
      ['PUT', '/api/v1/routes'],
    ] as const) {
      const response = await context.app.inject({ method, url, headers: auth(key), payload: {} });
      expect(response.statusCode).toBe(403);
    }
  });
});
