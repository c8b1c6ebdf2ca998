/**
 * METRICS_TOKEN: with a token set, GET /metrics answers only `Authorization: Bearer
 * <token>`, and 401 in the error shape otherwise; /healthz stays open. Without one, /metrics stays open
 * (the app of the other tests).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { makeTempDir, openTestStore, testEngine } from '../support/context.js';

const TOKEN = 'metrics-token-0123456789abcdef';

describe(`GET /metrics with METRICS_TOKEN (${testEngine})`, () => {
  let guarded: FastifyInstance;
  let open: FastifyInstance;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await openTestStore(makeTempDir());
    dispose = opened.dispose;
    ({ app: guarded } = await buildApp({ store: opened.store, metricsToken: TOKEN }));
    ({ app: open } = await buildApp({ store: opened.store }));
  });
  afterAll(async () => {
    await guarded.close();
    await open.close();
    await dispose();
  });

  const metrics = (app: FastifyInstance, authorization?: string) =>
    app.inject({ method: 'GET', url: '/metrics', headers: authorization === undefined ? {} : { authorization } });

  it('answers the right bearer token with the metrics', async () => {
    const response = await metrics(guarded, `Bearer ${TOKEN}`);
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('outbox_mails{status=');
    expect((await metrics(guarded, `bearer ${TOKEN}`)).statusCode).toBe(200);
  });

  it.each([
    ['no Authorization', undefined, 'missing_metrics_token'],
    ['a wrong token', 'Bearer metrics-token-0123456789abcdeX', 'invalid_metrics_token'],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, 20)}`, 'invalid_metrics_token'],
    ['the token with another scheme', `Token ${TOKEN}`, 'invalid_metrics_token'],
    ['the bare token', TOKEN, 'invalid_metrics_token'],
  ])('answers 401 to %s, in the error shape, naming the header', async (_label, authorization, code) => {
    const response = await metrics(guarded, authorization);
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="metrics"');
    expect(response.json()).toEqual({ error: { code, message: 'GET /metrics needs header Authorization: Bearer <METRICS_TOKEN>.' } });
    expect(response.body).not.toContain('outbox_mails');
  });

  it('leaves /healthz open, and /metrics open when no token is set', async () => {
    expect((await guarded.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await metrics(open)).statusCode).toBe(200);
  });
});
