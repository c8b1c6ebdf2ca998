/**
 * The router alone (delivery/relay-router.ts) against real SMTP peers on loopback, with short windows: a relay that
 * answers only 4xx is marked down after its streak and its mails move on; a down relay is probed and comes back; a
 * mail whose relay was cut after its message was handed over does not move, one cut before it moves on at once; and the
 * pure parts (domain patterns, the pacer).
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createPacer } from '../../src/delivery/relay-pacer.js';
import type { RelayRouter } from '../../src/delivery/relay-router.js';
import { createRelayTransport } from '../../src/delivery/relay-transport.js';
import { domainMatches, routeOf, type RelaySettings, type RoutingTable } from '../../src/relays/routing-table.js';
import { closedPort } from '../support/net.js';
import { createRelayFixture, ROUTED_MAIL, testMessage } from '../support/relay-fixture.js';

const cutters: net.Server[] = [];
// Registered before the fixture, so it runs after it (after-hooks run in reverse): the router's connections to
// the cutting peers are closed before the peers wait for their connections to end.
afterEach(async () => {
  for (const server of cutters.splice(0)) await new Promise((resolve) => server.close(resolve));
});
const fixture = createRelayFixture();

/**
 * A relay that drops the connection, without a reply, on RCPT TO or once the message's final "." has arrived: what a
 * relay killed mid-transaction looks like to the worker. It says how many messages reached their end.
 */
async function startCuttingPeer(cutAt: 'RCPT' | 'end of message'): Promise<{ url: string; messagesEnded: () => number }> {
  let ended = 0;
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.write('220 cutting peer\r\n');
    let buffer = '';
    let inMessage = false;
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      for (;;) {
        if (inMessage) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end === -1) return;
          ended += 1;
          socket.destroy();
          return;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol === -1) return;
        const verb = buffer.slice(0, 4).toUpperCase();
        buffer = buffer.slice(eol + 2);
        if (verb === 'RCPT' && cutAt === 'RCPT') {
          socket.destroy();
          return;
        }
        if (verb === 'DATA') {
          inMessage = true;
          socket.write('354 go on\r\n');
        } else if (verb === 'QUIT') {
          socket.end('221 bye\r\n');
          return;
        } else socket.write('250 ok\r\n');
      }
    });
  });
  cutters.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `smtp://127.0.0.1:${(server.address() as net.AddressInfo).port}`, messagesEnded: () => ended };
}

function relay(id: number, name: string, url: string): RelaySettings {
  return { id, name, url, tls: 'opportunistic', credentials: undefined, maxConnections: 2, maxPerSecond: null, maxPerDay: null };
}

function routerOver(table: RoutingTable, windows: { deferringDownAfterMs?: number; minProbeDelayMs?: number } = {}): RelayRouter {
  const fallback = fixture.createTransport('smtp://127.0.0.1:1', { connectionTimeoutMs: 2000 });
  return fixture.createRouter({
    directory: { current: async () => table, changed: () => undefined },
    defaultTransport: fallback,
    createTransport: (settings) =>
      createRelayTransport(settings.url, { maxConnections: settings.maxConnections, connectionTimeoutMs: 5000, socketTimeoutMs: 5000 }),
    ...windows,
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('relay router', () => {
  it('a relay answering only 4xx for the window is marked down, its mails move on at once; a probe brings it back', async () => {
    const primary = await fixture.startPeer();
    const backup = await fixture.startPeer();
    primary.answer = () => ({ code: 451, message: '4.3.0 Try later' });
    const table: RoutingTable = {
      relays: new Map([
        [1, relay(1, 'primary', primary.url)],
        [2, relay(2, 'backup', backup.url)],
      ]),
      routes: [{ id: 1, apiKeyId: null, senderDomain: null, recipientDomain: null, lane: null, relayIds: [1, 2] }],
    };
    const r = routerOver(table, { deferringDownAfterMs: 300, minProbeDelayMs: 1_000 });
    // Inside the window the 4xx is the mail's answer, as without routes.
    const first = await r.route(ROUTED_MAIL);
    expect((await first!.transport.send(testMessage(0))).kind).toBe('deferred');
    expect(first!.trail()).toEqual({ relay: 'primary' });
    await sleep(200);
    expect((await (await r.route(ROUTED_MAIL))!.transport.send(testMessage(1))).kind).toBe('deferred');
    await sleep(200);
    // Three 4xx over the window: down, and this mail goes on to the backup in the same send.
    const third = await r.route(ROUTED_MAIL);
    expect((await third!.transport.send(testMessage(2))).kind).toBe('sent');
    expect(third!.trail()).toEqual({ relay: 'backup', passedOver: [{ relay: 'primary', reply: expect.stringContaining('451') }] });
    expect(r.states().find((s) => s.name === 'primary')!.down).toBe(true);
    // While down it is skipped: nothing more reaches it.
    const attemptsWhileDown = primary.attempts;
    const skipped = await r.route(ROUTED_MAIL);
    expect((await skipped!.transport.send(testMessage(3))).kind).toBe('sent');
    expect(skipped!.trail()).toEqual({ relay: 'backup' });
    expect(primary.attempts).toBe(attemptsWhileDown);

    // It recovers; once the probe is due, the next mail is the probe and the relay is back.
    primary.answer = () => ({ accept: true });
    await sleep(1_100);
    const probe = await r.route(ROUTED_MAIL);
    expect((await probe!.transport.send(testMessage(4))).kind).toBe('sent');
    expect(probe!.trail()).toEqual({ relay: 'primary' });
    expect(r.states().find((s) => s.name === 'primary')!.down).toBe(false);
    expect(backup.received.map((m) => m.messageId)).toEqual(['<m2@test>', '<m3@test>']);
    expect(primary.received.map((m) => m.messageId)).toEqual(['<m4@test>']);
  });

  it('an unreachable primary fails over; with every relay of the route down the mail is unreachable, as without routes', async () => {
    const port = await closedPort();
    const backupPort = await closedPort();
    const table: RoutingTable = {
      relays: new Map([
        [1, relay(1, 'primary', `smtp://127.0.0.1:${port}`)],
        [2, relay(2, 'backup', `smtp://127.0.0.1:${backupPort}`)],
      ]),
      routes: [{ id: 1, apiKeyId: null, senderDomain: null, recipientDomain: null, lane: null, relayIds: [1, 2] }],
    };
    const r = routerOver(table);
    const routed = await r.route(ROUTED_MAIL);
    const outcome = await routed!.transport.send(testMessage(0));
    expect(outcome).toMatchObject({ kind: 'unreachable', beforeTransaction: true });
    expect(routed.trail()!.passedOver!.map((p) => p.relay)).toEqual(['primary', 'backup']);
    expect(
      r
        .states()
        .filter((s) => s.down)
        .map((s) => s.name),
    ).toEqual(['primary', 'backup']);
  });

  it('a relay that drops the connection after MAIL FROM does not fail over: the relay may have the mail', async () => {
    const primary = await fixture.startPeer();
    const backup = await fixture.startPeer();
    primary.delayMs = 3_000;
    const table: RoutingTable = {
      relays: new Map([
        [1, { ...relay(1, 'primary', primary.url) }],
        [2, relay(2, 'backup', backup.url)],
      ]),
      routes: [{ id: 1, apiKeyId: null, senderDomain: null, recipientDomain: null, lane: null, relayIds: [1, 2] }],
    };
    const router = fixture.createRouter({
      directory: { current: async () => table, changed: () => undefined },
      defaultTransport: fixture.createTransport('smtp://127.0.0.1:1'),
      // A reply timeout shorter than the relay's wait at the end of DATA.
      createTransport: (settings) => createRelayTransport(settings.url, { socketTimeoutMs: 500, connectionTimeoutMs: 5000 }),
    });
    const routed = await router.route(ROUTED_MAIL);
    const outcome = await routed!.transport.send(testMessage(0));
    expect(outcome.kind).toBe('unreachable');
    expect(outcome).not.toHaveProperty('beforeTransaction');
    expect(routed!.trail()).toEqual({ relay: 'primary' });
    expect(backup.attempts).toBe(0);
  });

  it('a connection lost before the relay asked for the message moves the mail on at once; lost after its end, it stays', async () => {
    const atRcpt = await startCuttingPeer('RCPT');
    const atEnd = await startCuttingPeer('end of message');
    const backup = await fixture.startPeer();
    const table: RoutingTable = {
      relays: new Map([
        [1, relay(1, 'at-rcpt', atRcpt.url)],
        [2, relay(2, 'at-end', atEnd.url)],
        [3, relay(3, 'backup', backup.url)],
      ]),
      routes: [
        { id: 1, apiKeyId: 1, senderDomain: null, recipientDomain: null, lane: null, relayIds: [1, 3] },
        { id: 2, apiKeyId: 2, senderDomain: null, recipientDomain: null, lane: null, relayIds: [2, 3] },
      ],
    };
    const r = routerOver(table, { deferringDownAfterMs: 300 });
    // Nothing of the message left: the backup takes it within the same send, and the relay is not down for one cut.
    const cutEarly = await r.route({ ...ROUTED_MAIL, apiKeyId: 1 });
    expect((await cutEarly.transport.send(testMessage(0))).kind).toBe('sent');
    expect(cutEarly.trail()).toEqual({ relay: 'backup', passedOver: [{ relay: 'at-rcpt', reply: expect.stringMatching(/closed/i) }] });
    expect(backup.received.map((m) => m.messageId)).toEqual(['<m0@test>']);
    expect(r.states().find((s) => s.name === 'at-rcpt')).toMatchObject({ down: false });
    // The message's end reached the relay, which may have taken it: the mail's own retry, nothing to the backup.
    const cutLate = await r.route({ ...ROUTED_MAIL, apiKeyId: 2 });
    const late = await cutLate.transport.send(testMessage(1));
    expect(late).toMatchObject({ kind: 'unreachable' });
    expect(late).not.toHaveProperty('beforeMessage');
    expect(cutLate.trail()).toEqual({ relay: 'at-end' });
    expect(atEnd.messagesEnded()).toBe(1);
    expect(backup.received).toHaveLength(1);
    // Lost connections are no answers: cut after cut over the window marks the relay down, and even then the mail whose
    // message reached it is not moved.
    for (let i = 2; i < 4; i++) {
      await sleep(200);
      const routed = await r.route({ ...ROUTED_MAIL, apiKeyId: 2 });
      expect((await routed.transport.send(testMessage(i))).kind).toBe('unreachable');
      expect(routed.trail()).toEqual({ relay: 'at-end' });
    }
    expect(r.states().find((s) => s.name === 'at-end')).toMatchObject({ down: true, state: 'down' });
    expect(backup.received).toHaveLength(1);
  });

  it('a relay that took its maxPerDay is passed over for the rest of the day; a quota on every relay defers the mail', async () => {
    const limited = await fixture.startPeer();
    const backup = await fixture.startPeer();
    const table: RoutingTable = {
      relays: new Map([
        [1, { ...relay(1, 'limited', limited.url), maxPerDay: 2 }],
        [2, { ...relay(2, 'backup', backup.url), maxPerDay: 1 }],
      ]),
      routes: [{ id: 1, apiKeyId: null, senderDomain: null, recipientDomain: null, lane: null, relayIds: [1, 2] }],
    };
    const r = routerOver(table);
    // A refusal does not count against the day: only what the relay took.
    limited.answer = (_message, index) => (index === 0 ? { code: 550, message: '5.7.1 No' } : { accept: true });
    const trails = [];
    const kinds = [];
    for (let i = 0; i < 5; i++) {
      const routed = (await r.route(ROUTED_MAIL))!;
      kinds.push((await routed.transport.send(testMessage(i))).kind);
      trails.push(routed.trail());
    }
    expect(kinds).toEqual(['rejected', 'sent', 'sent', 'sent', 'deferred']);
    expect(limited.received.map((m) => m.messageId)).toEqual(['<m1@test>', '<m2@test>']);
    expect(backup.received.map((m) => m.messageId)).toEqual(['<m3@test>']);
    expect(trails[3]).toEqual({
      relay: 'backup',
      passedOver: [{ relay: 'limited', reply: 'Not sent: relay limited took its 2 messages of the day (maxPerDay)' }],
    });
    expect(trails[4]!.passedOver!.map((p) => p.relay)).toEqual(['limited', 'backup']);
  });

  it('matches domain patterns and routes in order; the pacer spaces takes by 1/rate', async () => {
    expect(domainMatches('example.com', 'example.com')).toBe(true);
    expect(domainMatches('example.com', 'mail.example.com')).toBe(false);
    expect(domainMatches('*.example.com', 'mail.example.com')).toBe(true);
    expect(domainMatches('*.example.com', 'a.b.example.com')).toBe(true);
    expect(domainMatches('*.example.com', 'example.com')).toBe(false);
    expect(domainMatches('*.example.com', 'badexample.com')).toBe(false);
    const table: RoutingTable = {
      relays: new Map(),
      routes: [
        { id: 1, apiKeyId: 7, senderDomain: null, recipientDomain: null, lane: null, relayIds: [1] },
        { id: 2, apiKeyId: null, senderDomain: null, recipientDomain: '*.de', lane: 1, relayIds: [2] },
        { id: 3, apiKeyId: null, senderDomain: null, recipientDomain: '*.de', lane: null, relayIds: [3] },
      ],
    };
    expect(routeOf(table, { apiKeyId: 7, lane: 1, sender: 'a@x.com', recipients: ['b@mail.de'] })?.id).toBe(1);
    expect(routeOf(table, { apiKeyId: 8, lane: 1, sender: 'a@x.com', recipients: ['b@mail.de', 'c@x.com'] })?.id).toBe(2);
    expect(routeOf(table, { apiKeyId: null, lane: 0, sender: 'a@x.com', recipients: ['B@Mail.DE'] })?.id).toBe(3);
    // The first recipient decides.
    expect(routeOf(table, { apiKeyId: null, lane: 0, sender: 'a@x.com', recipients: ['c@x.com', 'b@mail.de'] })).toBeUndefined();

    const pacer = createPacer(20);
    const started = performance.now();
    for (let i = 0; i < 5; i++) await pacer.take();
    expect(performance.now() - started).toBeGreaterThanOrEqual(((5 - 1) / 20) * 1000);
  });
});
