/**
 * Webhook delivery from the outside: a real receiver on loopback checks every request with the
 * `standardwebhooks` package, as an application would; the schedule is shortened by configuration.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { auth } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { startReceiver, verify, type Receiver } from './receiver.js';
import {
  appendEvents,
  createEndpoint,
  deleteAllEndpoints,
  listDeliveries,
  openWebhookContext,
  waitForDelivery,
  type WebhookContext,
} from './support.js';

let context: WebhookContext;
let receiver: Receiver;

beforeAll(async () => {
  context = await openWebhookContext();
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

const requestsOf = (eventId: string) => receiver.requests.filter((r) => r.headers['webhook-id'] === eventId);

describe('signed delivery', () => {
  it('delivers each event once, signed; the receiver verifies every one, and a wrong secret or a changed body fails', async () => {
    const endpoint = await createEndpoint(context, { url: receiver.url, description: 'all events' });
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    context.dispatcher();
    const ids = await appendEvents(context, [{ type: 'mail.queued' }, { type: 'mail.sent' }, { type: 'mail.failed' }]);
    await waitUntil(() => ids.every((id) => requestsOf(id).length === 1), { what: 'the three events at the receiver' });
    for (const request of receiver.requests) {
      const body = verify(endpoint.secret, request) as { type: string; timestamp: string; data: unknown };
      expect(ids).toContain(request.headers['webhook-id']);
      expect(body.type).toMatch(/^mail\./);
      expect(Date.parse(body.timestamp)).not.toBeNaN();
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]{44}$/);
      expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      expect(request.headers['content-type']).toBe('application/json');
      expect(() => verify('whsec_' + Buffer.alloc(24, 7).toString('base64'), request)).toThrow(/No matching signature/);
      expect(() => verify(endpoint.secret, { ...request, body: request.body.replace('mail.', 'mail-') })).toThrow(/No matching signature/);
    }
    // Outcomes are recorded in groups, a moment after the answers.
    await waitUntil(async () => (await listDeliveries(context, endpoint.id)).data.every((d) => d.state === 'succeeded'), {
      what: 'three deliveries succeeded',
    });
    const { data } = await listDeliveries(context, endpoint.id);
    expect(data.map((d) => d.attempts.length)).toEqual([1, 1, 1]);
    const attempt = (await listDeliveries(context, endpoint.id)).data[0]!.attempts[0]!;
    expect(attempt).toMatchObject({ httpStatus: 200, response: 'ok', error: null });
  });

  it('a request signed more than 5 minutes ago fails verification', async () => {
    const endpoint = await createEndpoint(context, { url: receiver.url });
    // A dispatcher whose clock runs 6 minutes behind signs with a timestamp a receiver must refuse.
    context.dispatcher({ clock: { now: () => Date.now() - 6 * 60_000 } });
    const [id] = await appendEvents(context, [{ type: 'mail.sent' }]);
    await waitUntil(() => requestsOf(id!).length === 1, { what: 'the event at the receiver' });
    expect(() => verify(endpoint.secret, requestsOf(id!)[0]!)).toThrow(/timestamp too old/);
  });

  it('sends only the event types and the application an endpoint asked for', async () => {
    await context.services.auth.createApiKey('shop');
    const [application] = await context.services.applications.listApplications();
    const sentOnly = await createEndpoint(context, { url: `${receiver.url}?sent`, eventTypes: ['mail.sent'] });
    const shopOnly = await createEndpoint(context, { url: `${receiver.url}?shop`, applicationId: application!.id });
    expect(shopOnly.application).toEqual({ id: application!.id, name: 'shop' });
    context.dispatcher();
    const [shopSent, otherSent, shopQueued] = await appendEvents(context, [
      { type: 'mail.sent', apiKeyId: application!.id },
      { type: 'mail.sent', apiKeyId: null },
      { type: 'mail.queued', apiKeyId: application!.id },
    ]);
    await waitUntil(() => receiver.requests.length >= 4, { what: 'four deliveries' });
    const sentIds = (await listDeliveries(context, sentOnly.id)).data.map((d) => d.eventId).sort();
    const shopIds = (await listDeliveries(context, shopOnly.id)).data.map((d) => d.eventId).sort();
    expect(sentIds).toEqual([shopSent, otherSent].sort());
    expect(shopIds).toEqual([shopSent, shopQueued].sort());
  });
});

describe('retries', () => {
  it('a receiver answering 500 three times, then 200, gets the event four times with the same webhook-id on the schedule', async () => {
    const schedule = [0, 300, 600, 900];
    const endpoint = await createEndpoint(context, { url: receiver.url });
    receiver.answer = (_request, index) => (index < 3 ? { status: 500, body: `boom ${index}` } : { status: 200, body: 'fine' });
    context.dispatcher({ schedule, pollIntervalMs: 1000 });
    const [id] = await appendEvents(context, [{ type: 'mail.deferred' }]);
    const delivery = await waitForDelivery(context, endpoint.id, id!, (d) => d.state === 'succeeded', 'the delivery to succeed');
    const received = requestsOf(id!);
    expect(received).toHaveLength(4);
    expect(new Set(received.map((r) => r.headers['webhook-id']))).toEqual(new Set([id]));
    for (const request of received) verify(endpoint.secret, request);
    // Each retry waited at least its step of the schedule (less the 10 % jitter and a timer's slack).
    for (let i = 1; i < 4; i += 1) expect(received[i]!.at - received[i - 1]!.at).toBeGreaterThanOrEqual(schedule[i]! * 0.9 - 15);
    expect(delivery.attempts.map((a) => a.httpStatus)).toEqual([500, 500, 500, 200]);
    expect(delivery.attempts.map((a) => a.response)).toEqual(['boom 0', 'boom 1', 'boom 2', 'fine']);
    expect(delivery.nextAttemptAt).toBeNull();
  });

  it('honours Retry-After, and fails the delivery once the schedule is spent', async () => {
    const endpoint = await createEndpoint(context, { url: receiver.url });
    receiver.answer = () => ({ status: 503, headers: { 'retry-after': '2' }, body: 'later' });
    context.dispatcher({ schedule: [0, 100] });
    const [id] = await appendEvents(context, [{ type: 'mail.sent' }]);
    const delivery = await waitForDelivery(context, endpoint.id, id!, (d) => d.state === 'failed', 'the delivery to fail');
    const received = requestsOf(id!);
    expect(received).toHaveLength(2);
    expect(received[1]!.at - received[0]!.at).toBeGreaterThanOrEqual(1_950);
    expect(delivery.attempts.map((a) => a.httpStatus)).toEqual([503, 503]);
    const [listed] = (await context.services.webhooks.listEndpoints()).filter((e) => e.id === endpoint.id);
    expect(listed!.failingSince).not.toBeNull();
    expect(listed!.last24h).toMatchObject({ attempts: 2, succeeded: 0, failed: 2, successRate: 0 });
  });

  it('a refused connection and a timeout are retried, and logged with their error', async () => {
    const { closedPort } = await import('../support/net.js');
    const refused = await createEndpoint(context, { url: `http://127.0.0.1:${await closedPort()}/x` });
    const slow = await createEndpoint(context, { url: receiver.url });
    // The receiver holds the first request past the timeout (it answers after 6 s), the second at once. The
    // timeout is 2 s, not less: at load 25 an answer given at once took over 300 ms to arrive, and the retry
    // timed out too.
    receiver.answer = (_request, index) => (index === 0 ? { status: 200, delayMs: 6_000 } : { status: 200 });
    context.dispatcher({ schedule: [0, 50], timeoutMs: 2_000 });
    const [id] = await appendEvents(context, [{ type: 'mail.failed' }]);
    const toRefused = await waitForDelivery(context, refused.id, id!, (d) => d.state === 'failed', 'the refused delivery to fail');
    expect(toRefused.attempts).toHaveLength(2);
    expect(toRefused.attempts[0]).toMatchObject({ httpStatus: null, error: 'connection refused' });
    const toSlow = await waitForDelivery(context, slow.id, id!, (d) => d.state === 'succeeded', 'the slow delivery to succeed on retry');
    expect(toSlow.attempts.map((a) => [a.httpStatus, a.error])).toEqual([
      [null, 'timeout after 2000 ms'],
      [200, null],
    ]);
  });

  it('a 410 disables the endpoint (reason gone), audited', async () => {
    const endpoint = await createEndpoint(context, { url: receiver.url });
    receiver.answer = () => ({ status: 410, body: 'gone' });
    context.dispatcher();
    const [id] = await appendEvents(context, [{ type: 'mail.sent' }]);
    const delivery = await waitForDelivery(context, endpoint.id, id!, (d) => d.state === 'failed', 'the delivery to fail');
    expect(delivery.attempts).toHaveLength(1);
    const after = await context.services.webhooks.getEndpoint(endpoint.id);
    expect(after).toMatchObject({ enabled: false, disabledReason: 'gone' });
    const audit = await context.app.inject({ method: 'GET', url: '/api/v1/audit?action=webhook.disable', headers: auth(context.token) });
    expect(audit.json().data[0]).toMatchObject({ actor: 'system', target: `webhook:${endpoint.id}`, after: { disabledReason: 'gone' } });
    // Disabled: later events are not delivered to it. (The other endpoint may get `later` too, when the
    // dispatcher's fan-out reads it after the endpoint was made: only the disabled one's path is asked about.)
    const [later] = await appendEvents(context, [{ type: 'mail.sent' }]);
    await createEndpoint(context, { url: `${receiver.url}?other` });
    const [marker] = await appendEvents(context, [{ type: 'mail.sent' }]);
    await waitUntil(() => requestsOf(marker!).length === 1, { what: 'a later event at the other endpoint' });
    expect(requestsOf(later!).filter((request) => !request.path.endsWith('?other'))).toHaveLength(0);
  });
});

describe('secrets, test events and replay', () => {
  it('after a rotation both signatures verify, the old secret alone and the new alone', async () => {
    const endpoint = await createEndpoint(context, { url: receiver.url });
    const rotated = await context.app.inject({
      method: 'POST',
      url: `/api/v1/webhooks/${endpoint.id}/rotate-secret`,
      headers: auth(context.token),
    });
    expect(rotated.statusCode).toBe(200);
    const next = rotated.json().data[0] as { secret: string; previousSecretExpiresAt: string };
    expect(next.secret).not.toBe(endpoint.secret);
    expect(Date.parse(next.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23.9 * 3_600_000);
    context.dispatcher();
    const [id] = await appendEvents(context, [{ type: 'mail.sent' }]);
    await waitUntil(() => requestsOf(id!).length === 1, { what: 'the event at the receiver' });
    const request = requestsOf(id!)[0]!;
    expect(request.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verify(endpoint.secret, request)).toMatchObject({ type: 'mail.sent' });
    expect(verify(next.secret, request)).toMatchObject({ type: 'mail.sent' });
    // The secret is shown at creation and rotation only.
    const listed = await context.app.inject({ method: 'GET', url: `/api/v1/webhooks/${endpoint.id}`, headers: auth(context.token) });
    expect(listed.body).not.toContain('whsec_');
  });

  it('POST /test sends a webhook.test event to that endpoint alone', async () => {
    const endpoint = await createEndpoint(context, { url: receiver.url });
    const other = await createEndpoint(context, { url: `${receiver.url}?other` });
    context.dispatcher();
    const response = await context.app.inject({
      method: 'POST',
      url: `/api/v1/webhooks/${endpoint.id}/test`,
      headers: auth(context.token),
    });
    expect(response.statusCode).toBe(202);
    const { eventId } = response.json().data[0] as { eventId: string };
    await waitUntil(() => requestsOf(eventId).length === 1, { what: 'the test event' });
    expect(verify(endpoint.secret, requestsOf(eventId)[0]!)).toMatchObject({ type: 'webhook.test', data: { endpointId: endpoint.id } });
    expect((await listDeliveries(context, other.id)).data).toHaveLength(0);
  });

  it('replays one event, and every delivery failed since an instant', async () => {
    const endpoint = await createEndpoint(context, { url: receiver.url });
    receiver.answer = () => ({ status: 500 });
    context.dispatcher({ schedule: [0] });
    const since = new Date().toISOString();
    const [a, b] = await appendEvents(context, [{ type: 'mail.sent' }, { type: 'mail.failed' }]);
    await waitForDelivery(context, endpoint.id, b!, (d) => d.state === 'failed', 'b to fail');
    await waitForDelivery(context, endpoint.id, a!, (d) => d.state === 'failed', 'a to fail');
    receiver.answer = () => ({ status: 200 });
    const one = await context.app.inject({
      method: 'POST',
      url: `/api/v1/webhooks/${endpoint.id}/replay`,
      headers: auth(context.token),
      payload: { eventId: a },
    });
    expect(one.statusCode).toBe(202);
    expect(one.json().data[0]).toEqual({ queued: 1 });
    const replayed = await waitForDelivery(context, endpoint.id, a!, (d) => d.state === 'succeeded', 'a replayed');
    expect(replayed.attempts.map((x) => x.httpStatus)).toEqual([500, 200]);
    expect(new Set(requestsOf(a!).map((r) => r.headers['webhook-id']))).toEqual(new Set([a]));
    const all = await context.app.inject({
      method: 'POST',
      url: `/api/v1/webhooks/${endpoint.id}/replay`,
      headers: auth(context.token),
      payload: { failedSince: since },
    });
    expect(all.json().data[0]).toEqual({ queued: 1 });
    await waitForDelivery(context, endpoint.id, b!, (d) => d.state === 'succeeded', 'b replayed');
    const unknown = await context.app.inject({
      method: 'POST',
      url: `/api/v1/webhooks/${endpoint.id}/replay`,
      headers: auth(context.token),
      payload: { eventId: 'evt_nothing' },
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('event_not_found');
  });

  it("lists a mail's deliveries", async () => {
    const endpoint = await createEndpoint(context, { url: receiver.url });
    context.dispatcher();
    const [id] = await appendEvents(context, [{ type: 'mail.sent' }]);
    const delivery = await waitForDelivery(context, endpoint.id, id!, (d) => d.state === 'succeeded', 'the delivery');
    const response = await context.app.inject({
      method: 'GET',
      url: `/api/v1/mail/${delivery.mailId}/webhook-deliveries`,
      headers: auth(context.token),
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toEqual([expect.objectContaining({ eventId: id, endpointUrl: receiver.url, state: 'succeeded' })]);
  });
});

describe('who gets an event', () => {
  it('an endpoint created while events wait for their fan-out gets none of those from before it, and every one after', async () => {
    // No dispatcher runs yet: the event waits, as it does behind a busy dispatcher.
    const [before] = await appendEvents(context, [{ type: 'mail.sent' }]);
    await new Promise((resolve) => setTimeout(resolve, 5)); // the store's instants are milliseconds
    await createEndpoint(context, { url: receiver.url });
    const [after] = await appendEvents(context, [{ type: 'mail.sent' }]);
    context.dispatcher();
    await waitUntil(() => requestsOf(after!).length === 1, { what: 'the event made after the endpoint' });
    expect(requestsOf(before!)).toHaveLength(0);
  });
});
