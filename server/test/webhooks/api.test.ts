/**
 * The webhook routes as a client sees them: operators only, bad input answered with a code and the field,
 * every change in the audit log, the OpenAPI document; and the SSRF rule (WEBHOOK_ALLOW_PRIVATE off) at
 * creation and at connect time.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createWebhookService } from '../../src/webhooks/webhook.service.js';
import { auth } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { startReceiver, type Receiver } from './receiver.js';
import { appendEvents, deleteAllEndpoints, listDeliveries, openWebhookContext, waitForDelivery, type WebhookContext } from './support.js';

let context: WebhookContext;
let receiver: Receiver;

beforeAll(async () => {
  context = await openWebhookContext({ allowPrivate: false });
  receiver = await startReceiver();
});
afterAll(async () => {
  await context?.close();
  await receiver?.close();
});
afterEach(async () => {
  await context.stopDispatchers();
  await deleteAllEndpoints(context);
  receiver.requests.length = 0;
  receiver.answer = () => ({ status: 200, body: 'ok' });
});

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, token = context.token) =>
  context.app.inject({ method, url, headers: auth(token), ...(payload === undefined ? {} : { payload: payload as object }) });

/** An endpoint on loopback, made as an installation with WEBHOOK_ALLOW_PRIVATE=true would (the API here refuses it). */
async function privateEndpoint(url: string, extra: Record<string, unknown> = {}) {
  const service = createWebhookService({ store: context.store, clock: { now: () => Date.now() }, allowPrivate: true });
  return service.createEndpoint({ url, ...extra }, 'test');
}

describe('endpoints', () => {
  it('create, read, change, disable, enable and delete; each change audited, the secret shown at creation only', async () => {
    const created = await call('POST', '/api/v1/webhooks', {
      url: 'https://hooks.example.com/outbox',
      description: 'CRM',
      eventTypes: ['mail.sent', 'mail.failed'],
    });
    expect(created.statusCode).toBe(201);
    const endpoint = created.json().data[0];
    expect(endpoint).toMatchObject({
      url: 'https://hooks.example.com/outbox',
      description: 'CRM',
      eventTypes: ['mail.sent', 'mail.failed'],
      application: null,
      enabled: true,
      disabledReason: null,
      failingSince: null,
      previousSecretExpiresAt: null,
      last24h: { attempts: 0, succeeded: 0, failed: 0, successRate: null },
    });
    expect(endpoint.secret).toMatch(/^whsec_/);

    const list = await call('GET', '/api/v1/webhooks');
    expect(list.json().data).toHaveLength(1);
    expect(list.body).not.toContain('whsec_');

    const disabled = await call('PATCH', `/api/v1/webhooks/${endpoint.id}`, { enabled: false, description: 'CRM (paused)' });
    expect(disabled.statusCode).toBe(200);
    expect(disabled.json().data[0]).toMatchObject({ enabled: false, disabledReason: 'operator', description: 'CRM (paused)' });
    const enabled = await call('PATCH', `/api/v1/webhooks/${endpoint.id}`, { enabled: true, eventTypes: [] });
    expect(enabled.json().data[0]).toMatchObject({ enabled: true, disabledReason: null, eventTypes: [] });

    const deleted = await call('DELETE', `/api/v1/webhooks/${endpoint.id}`);
    expect(deleted.statusCode).toBe(200);
    expect((await call('GET', `/api/v1/webhooks/${endpoint.id}`)).statusCode).toBe(404);

    const audit = await call('GET', '/api/v1/audit?action=webhook');
    const actions = (audit.json().data as Array<{ action: string; actor: string; target: string }>)
      .filter((e) => e.target === `webhook:${endpoint.id}`)
      .map((e) => `${e.action} ${e.actor}`);
    expect(actions).toEqual([
      'webhook.delete operator:ops',
      'webhook.update operator:ops',
      'webhook.update operator:ops',
      'webhook.create operator:ops',
    ]);
  });

  it('limits an endpoint to one application, from GET /api/v1/applications', async () => {
    await context.services.auth.createApiKey('billing');
    const applications = (await call('GET', '/api/v1/applications')).json().data as Array<{ id: number; name: string }>;
    const billing = applications.find((a) => a.name === 'billing')!;
    const created = await call('POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/b', applicationId: billing.id });
    expect(created.json().data[0].application).toEqual({ id: billing.id, name: 'billing' });
    const unknown = await call('POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/b', applicationId: 999_999 });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toMatchObject({ code: 'unknown_application', message: expect.stringContaining('body.applicationId') });
  });

  it('answers bad input with a code and the field', async () => {
    const cases: Array<[string, string, unknown, string, string]> = [
      ['POST', '/api/v1/webhooks', { url: 'ftp://example.com/x' }, 'invalid_url', 'body.url'],
      ['POST', '/api/v1/webhooks', { url: 'not a url' }, 'invalid_url', 'body.url'],
      ['POST', '/api/v1/webhooks', { url: 'https://example.com', eventTypes: ['mail.exploded'] }, 'validation_failed', 'eventTypes'],
      ['POST', '/api/v1/webhooks', { url: 'https://example.com', colour: 'red' }, 'validation_failed', 'colour'],
      ['POST', '/api/v1/webhooks', {}, 'validation_failed', 'url'],
      ['PATCH', '/api/v1/webhooks/1', { enabled: 'yes' }, 'validation_failed', 'enabled'],
      ['POST', '/api/v1/webhooks/1/replay', { eventId: 'evt_x', failedSince: '2026-01-01T00:00:00Z' }, 'validation_failed', 'body'],
    ];
    for (const [method, url, payload, code, field] of cases) {
      const response = await call(method as 'POST', url, payload);
      expect(response.statusCode, `${method} ${url} ${JSON.stringify(payload)}`).toBe(400);
      const error = response.json().error as { code: string; message: string };
      if (code !== 'validation_failed') expect(error.code).toBe(code);
      expect(error.message).toContain(field);
    }
    const cursor = await call('POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/c' });
    const id = cursor.json().data[0].id as number;
    const badCursor = await call('GET', `/api/v1/webhooks/${id}/deliveries?cursor=abc`);
    expect(badCursor.json().error).toMatchObject({ code: 'invalid_cursor' });
    const badState = await call('GET', `/api/v1/webhooks/${id}/deliveries?state=lost`);
    expect(badState.statusCode).toBe(400);
    expect((await call('GET', '/api/v1/webhooks/424242')).json().error.code).toBe('webhook_not_found');
    expect((await call('POST', '/api/v1/webhooks/424242/test')).statusCode).toBe(404);
    expect((await call('GET', '/api/v1/webhooks/424242/deliveries')).statusCode).toBe(404);
  });

  it('is for operators only: no token gets 401, an API key 403 operator_only', async () => {
    const key = await context.services.auth.createApiKey('intruder');
    for (const [method, url] of [
      ['GET', '/api/v1/webhooks'],
      ['POST', '/api/v1/webhooks'],
      ['GET', '/api/v1/applications'],
      ['GET', '/api/v1/mail/1/webhook-deliveries'],
    ] as const) {
      const payload = method === 'POST' ? { url: 'https://example.com' } : undefined;
      expect((await context.app.inject({ method, url, ...(payload ? { payload } : {}) })).statusCode).toBe(401);
      const byKey = await call(method, url, payload, key);
      expect(byKey.statusCode).toBe(403);
      expect(byKey.json()).toMatchObject({ error: { code: 'operator_only' } });
    }
  });

  it('is in the OpenAPI document', async () => {
    const document = (await context.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as { paths: Record<string, object> };
    for (const path of [
      '/api/v1/webhooks',
      '/api/v1/webhooks/{id}',
      '/api/v1/webhooks/{id}/rotate-secret',
      '/api/v1/webhooks/{id}/test',
      '/api/v1/webhooks/{id}/deliveries',
      '/api/v1/webhooks/{id}/replay',
      '/api/v1/mail/{id}/webhook-deliveries',
      '/api/v1/applications',
    ])
      expect(Object.keys(document.paths)).toContain(path);
  });
});

describe('SSRF: private targets refused unless WEBHOOK_ALLOW_PRIVATE=true', () => {
  it('refuses at creation a private literal and a name resolving to one, naming url', async () => {
    for (const url of [
      'http://127.0.0.1:8080/x',
      'http://[::1]/x',
      'http://10.0.0.5/x',
      'http://169.254.169.254/latest/meta-data',
      'http://[::ffff:127.0.0.1]/x',
      'http://localhost:9000/x',
    ]) {
      const response = await call('POST', '/api/v1/webhooks', { url });
      expect(response.statusCode, url).toBe(400);
      expect(response.json().error).toMatchObject({ code: 'webhook_url_not_public', message: expect.stringContaining('body.url') });
    }
    const created = await call('POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/ok' });
    const changed = await call('PATCH', `/api/v1/webhooks/${created.json().data[0].id}`, { url: 'http://192.168.1.10/x' });
    expect(changed.statusCode).toBe(400);
    expect(changed.json().error.code).toBe('webhook_url_not_public');
  });

  it('refuses at connect time a name that resolves to 127.0.0.1, and an IP literal, without reaching the receiver', async () => {
    const byName = await privateEndpoint(`http://localhost:${receiver.port}/hooks`);
    const byLiteral = await privateEndpoint(receiver.url);
    context.dispatcher({ allowPrivate: false, schedule: [0] });
    const [id] = await appendEvents(context, [{ type: 'mail.sent' }]);
    const named = await waitForDelivery(context, byName.id, id!, (d) => d.state === 'failed', 'the delivery by name to fail');
    expect(named.attempts[0]).toMatchObject({
      httpStatus: null,
      error: expect.stringMatching(/^localhost resolves to .* not a public address/),
    });
    const literal = await waitForDelivery(context, byLiteral.id, id!, (d) => d.state === 'failed', 'the delivery by literal to fail');
    expect(literal.attempts[0]!.error).toMatch(/^127\.0\.0\.1 is not a public address/);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('an endpoint failing for 5 days', () => {
  it('is disabled (reason failing), audited, and shows since when it failed', async () => {
    const endpoint = await privateEndpoint(receiver.url);
    receiver.answer = () => ({ status: 500 });
    const clock = new ManualClock(Date.now());
    const dispatcher = context.dispatcher({ clock, schedule: [0, 60_000, 60_000, 60_000] });
    const [id] = await appendEvents(context, [{ type: 'mail.sent' }]);
    await waitForDelivery(context, endpoint.id, id!, (d) => d.attempts.length === 1, 'the first attempt');
    const failing = await context.services.webhooks.getEndpoint(endpoint.id);
    expect(failing).toMatchObject({ enabled: true, failingSince: new Date(clock.now()).toISOString() });
    clock.advance(5 * 86_400_000);
    dispatcher.wake();
    await waitForDelivery(context, endpoint.id, id!, (d) => d.attempts.length === 2, 'the second attempt');
    await waitUntil(async () => !(await context.services.webhooks.getEndpoint(endpoint.id)).enabled, { what: 'the endpoint disabled' });
    expect(await context.services.webhooks.getEndpoint(endpoint.id)).toMatchObject({ enabled: false, disabledReason: 'failing' });
    const audit = await call('GET', '/api/v1/audit?action=webhook.disable');
    expect(audit.json().data[0]).toMatchObject({ target: `webhook:${endpoint.id}`, after: { disabledReason: 'failing' } });
    // Disabled: its pending retry is not attempted, however late it gets.
    clock.advance(86_400_000);
    dispatcher.wake();
    const { data } = await listDeliveries(context, endpoint.id);
    expect(data[0]!.attempts).toHaveLength(2);
  });
});

describe('retention', () => {
  it('purges attempts and finished deliveries past RETENTION_DAYS, keeping pending ones', async () => {
    const endpoint = await privateEndpoint(receiver.url);
    context.dispatcher({ schedule: [0] });
    const [done] = await appendEvents(context, [{ type: 'mail.sent' }]);
    await waitForDelivery(context, endpoint.id, done!, (d) => d.state === 'succeeded', 'a finished delivery');
    await context.stopDispatchers();
    // A delivery still owed: queued by a replay, with no dispatcher running to send it.
    const [owed] = await appendEvents(context, [{ type: 'mail.failed' }]);
    await context.services.webhooks.replay(endpoint.id, { eventId: owed! }, 'test');
    // Zero days: everything finished before now is past retention.
    const purged = await context.services.webhooks.purgeLog(0);
    expect(purged).toEqual({ attempts: 1, deliveries: 1 });
    const { data } = await listDeliveries(context, endpoint.id);
    expect(data.map((d) => [d.eventId, d.state])).toEqual([[owed, 'pending']]);
  });
});
