/**
 * An alert reaching a webhook receiver, signed ("reaches a webhook receiver signed"), as an operator
 * sets it up: `POST /api/v1/webhooks` subscribed to alert.firing and alert.resolved (contract/src/webhooks.ts),
 * a real HTTP receiver on loopback, the whole service started through start(config) with short alert timings,
 * no worker and a due mail, so `no_worker` fires within a second.
 * The process runs no worker: webhooks are still delivered by it (WEBHOOKS is on by default).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { waitUntil } from '../support/net.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';

interface Received {
  headers: Record<string, string>;
  body: string;
}

let environment: OutboxEnvironment | undefined;
let outbox: RunningOutbox | undefined;
let receiver: http.Server | undefined;

afterAll(async () => {
  await outbox?.stop();
  await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
  await environment?.dispose();
});

describe('alerts to webhook endpoints', () => {
  it('alert.firing reaches an endpoint subscribed to it, signed (Standard Webhooks), once', async () => {
    const received: Received[] = [];
    receiver = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push({ headers: request.headers as Record<string, string>, body });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

    environment = await freshEnvironment({
      WORKER: 'off',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      ALERT_EVALUATION_INTERVAL: '300ms',
      ALERT_PENDING: '0',
      ALERT_NO_WORKER_FOR: '0',
    });
    outbox = await startInProcess(environment.env);
    const baseUrl = `http://127.0.0.1:${outbox.httpPort}`;
    const login = await fetch(`${baseUrl}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
    });
    const token = ((await login.json()) as { data: Array<{ token: string }> }).data[0]!.token;
    const created = await fetch(`${baseUrl}/api/v1/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${token}` },
      body: JSON.stringify({ url: receiverUrl, eventTypes: ['alert.firing', 'alert.resolved'], description: 'alerts' }),
    });
    expect(created.status).toBe(201);
    const endpoint = (await created.json()) as { data: Array<{ secret: string }> };
    const secret = endpoint.data[0]!.secret;

    const apiKey = await outbox.services.auth.createApiKey('alerts');
    const submitted = await fetch(`${baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'hi', text: 'x' }),
    });
    expect(submitted.status).toBe(202);

    await waitUntil(() => received.some((r) => r.body.includes('"alert.firing"')), {
      what: 'alert.firing at the receiver',
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    const delivery = received.find((r) => r.body.includes('"alert.firing"'))!;
    const event = new Webhook(secret).verify(delivery.body, delivery.headers) as { type: string; data: Record<string, unknown> };
    expect(event.type).toBe('alert.firing');
    expect(event.data).toMatchObject({ rule: 'no_worker', state: 'firing', value: 1, threshold: 0 });
    expect(String(event.data.summary)).toBe('No live worker while 1 mail is due');
    expect(received.filter((r) => r.body.includes('"alert.firing"'))).toHaveLength(1);
  }, 120_000);
});
