/**
 * Throttling (docs/relays.md#throttling): which replies are throttles (the pure rules, by name), the
 * rate's halving and climb, the pacer whose rate changes under its waiters, and the router against a real SMTP peer
 * on loopback that answers `454 4.7.0 Throttling failure` past N messages a second: every message arrives, none more
 * than N in any second, within the attempt, and the relay is `throttled`, then `up` once its rate has climbed back.
 */
import { describe, expect, it } from 'vitest';
import { createPacer } from '../../src/delivery/relay-pacer.js';
import type { RelayRouter } from '../../src/delivery/relay-router.js';
import {
  CLIMB_SHARE_PER_SECOND,
  climbedRate,
  halvedRate,
  isThrottlingOutcome,
  isThrottlingReply,
  MIN_RATE_PER_SECOND,
} from '../../src/delivery/relay-throttling.js';
import type { RelayTransport } from '../../src/delivery/relay-transport.js';
import type { RoutingTable } from '../../src/relays/routing-table.js';
import { waitUntil } from '../support/net.js';
import { busiestSecond, createRelayFixture, ROUTED_MAIL, testMessage, THROTTLING_REPLY } from '../support/relay-fixture.js';

describe('isThrottlingReply', () => {
  const throttles: Array<[string, string]> = [
    ['SES past its sending rate', '454 4.7.0 Throttling failure: Maximum sending rate exceeded.'],
    ['SES past its daily quota', '454 Throttling failure: Daily message quota exceeded.'],
    ['a rate limit named', '451 4.7.1 Rate limit exceeded, slow down'],
    ['ratelimited in one word', '450 4.7.1 Ratelimited: try again in 60 s'],
    ['Gmail’s unusual rate', '421 4.7.28 Our system has detected an unusual rate of unsolicited mail'],
    ['Postfix’s anvil', '421 4.7.0 mx.example.net Error: too many connections from 192.0.2.7'],
    ['smtp-server’s client limit, at the greeting', '421 mx.example.net Too many connected clients, try again in a moment'],
    ['too many messages in a session', '450 4.7.0 Too many messages in this session'],
    [
      'Exchange’s concurrent connections',
      '421 4.3.2 The maximum number of concurrent connections has exceeded a limit, closing transmission channel',
    ],
    ['sending too fast', '450 4.7.1 You are sending too fast'],
    ['a 421 saying try again later', '421 4.7.0 Try again later, closing connection.'],
    ['a busy relay closing the connection', '421 Server busy, come back later'],
  ];
  for (const [name, reply] of throttles) it(`is a throttle: ${name}`, () => expect(isThrottlingReply(reply)).toBe(true));

  const others: Array<[string, string, number?]> = [
    ['a refusal, whatever its words (5xx)', '554 5.7.1 Throttling failure: sending paused for this account'],
    ['too many recipients (452): smaller transactions, not slower', '452 4.5.3 Too many recipients'],
    ['a full mailbox (4.2.2): one recipient’s state', '450 4.2.2 Mailbox over quota'],
    [
      'a recipient receiving too quickly (4.2.1)',
      '450 4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages',
    ],
    ['greylisting, even on a 421', '421 4.7.1 Greylisted, please try again later'],
    ['greylisting in action', '451 4.7.1 Greylisting in action, please come back later'],
    ['a plain deferral saying try later', '451 4.3.0 Try later'],
    ['a 450 saying try again later', '450 4.7.1 Service unavailable, try again later'],
    ['a relay shutting down', '421 4.3.2 Service shutting down, closing transmission channel'],
    ['a bare timeout', 'Timeout'],
    ['a refused connection', 'connect ECONNREFUSED 127.0.0.1:2525'],
    ['the code given apart from the text', 'Maximum sending rate exceeded', 550],
  ];
  for (const [name, reply, code] of others) it(`is not a throttle: ${name}`, () => expect(isThrottlingReply(reply, code)).toBe(false));

  it('reads an outcome: a 4xx deferral, or a 421 that ended the connection before MAIL FROM', () => {
    expect(isThrottlingOutcome({ kind: 'deferred', code: 454, reply: '454 4.7.0 Throttling failure', durationMs: 3 })).toBe(true);
    expect(
      isThrottlingOutcome({ kind: 'unreachable', reply: '421 Too many connected clients', durationMs: 3, beforeTransaction: true }),
    ).toBe(true);
    expect(isThrottlingOutcome({ kind: 'unreachable', reply: 'connect ECONNREFUSED', durationMs: 3, beforeTransaction: true })).toBe(false);
    expect(isThrottlingOutcome({ kind: 'rejected', code: 554, reply: '554 Throttling failure', durationMs: 3 })).toBe(false);
  });
});

describe('the rate', () => {
  it('halves on a throttle, never below the floor; climbs back by a tenth of its ceiling a second, never above it', () => {
    expect(halvedRate(20)).toBe(10);
    expect(halvedRate(0.3)).toBe(MIN_RATE_PER_SECOND);
    expect(CLIMB_SHARE_PER_SECOND).toBe(0.1);
    expect(climbedRate(10, 20, 1000)).toBe(12);
    expect(climbedRate(10, 20, 2500)).toBe(15);
    expect(climbedRate(10, 20, 60_000)).toBe(20);
    expect(climbedRate(10, 20, -5)).toBe(10);
  });

  it('the pacer’s waiters take a rate changed while they wait, in the order they came', async () => {
    const pacer = createPacer(1);
    const order: number[] = [];
    await pacer.take();
    const started = performance.now();
    const waits = [0, 1, 2].map((i) => pacer.take().then(() => order.push(i)));
    // At one a second the three would take three seconds; at 50 a second they go within about 60 ms.
    pacer.setRate(50);
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2]);
    expect(performance.now() - started).toBeLessThan(900);
    expect(pacer.perSecond).toBe(50);
    pacer.setRate(null);
    await pacer.take();
    expect(pacer.perSecond).toBeNull();
  });
});

const fixture = createRelayFixture();

/** A router with no routes over one transport, the default relay's, as a worker without routes has. */
function routerWithoutRoutes(transport: RelayTransport, onHealthChange?: () => void): RelayRouter {
  const noRoutes: RoutingTable = { relays: new Map(), routes: [] };
  return fixture.createRouter({
    directory: { current: async () => noRoutes, changed: () => undefined },
    defaultTransport: transport,
    createTransport: () => transport,
    onHealthChange,
  });
}

describe('a throttling relay', () => {
  it('without routes: the default relay is slowed, every message arrives within its attempt, none faster than the relay allows; throttled, then up', async () => {
    const { relay, acceptedAt } = await fixture.startThrottlingPeer(5);
    const transport = fixture.createTransport(relay.url, { maxConnections: 5, connectionTimeoutMs: 10_000, socketTimeoutMs: 10_000 });
    let changes = 0;
    const r = routerWithoutRoutes(transport, () => (changes += 1));
    expect(r.reports()).toEqual([expect.objectContaining({ relay: 'default', state: 'idle', since: null, sentToday: 0 })]);
    // Ten sends at once, as a worker's slots, twenty messages.
    const count = 20;
    let next = 0;
    const trails: Array<{ throttled?: number } | undefined> = [];
    const kinds: string[] = [];
    const statesSeen = new Set<string>();
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < count) {
          const i = next++;
          const routed = await r.route(ROUTED_MAIL);
          kinds.push((await routed.transport.send(testMessage(i))).kind);
          trails.push(routed.trail());
          statesSeen.add(r.states()[0]!.state);
        }
      }),
    );
    expect(kinds).toEqual(Array.from({ length: count }, () => 'sent'));
    expect(new Set(relay.received.map((m) => m.messageId)).size).toBe(count);
    expect(relay.received).toHaveLength(count);
    expect(busiestSecond(acceptedAt)).toBeLessThanOrEqual(5);
    // Without routes the trail names no relay; it says how often a mail was throttled and sent again.
    expect(trails.some((trail) => (trail?.throttled ?? 0) > 0)).toBe(true);
    expect(trails.every((trail) => trail === undefined || Object.keys(trail).join() === 'throttled')).toBe(true);
    expect(statesSeen.has('throttled')).toBe(true);
    const during = r.reports()[0]!;
    expect(during).toMatchObject({ relay: 'default', state: 'throttled', sentToday: count, maxPerSecond: null });
    expect(during.ratePerSecond).toBeGreaterThan(0);
    expect(during.lastError).toMatch(/^454 4\.7\.0 Throttling failure/);
    expect(during.latencyMs).not.toBeNull();
    expect(changes).toBeGreaterThan(0);
    // Left alone, its rate climbs back (a tenth of the way a second) and the relay is up again.
    await waitUntil(() => r.reports()[0]!.state === 'up', { timeoutMs: 20_000, intervalMs: 100, what: 'the relay to be up again' });
    expect(r.reports()[0]!.ratePerSecond).toBeNull();
  });

  it('a recipient throttled at RCPT while another is taken: the rate goes down, the mail is not sent again', async () => {
    const relay = await fixture.startPeer();
    relay.rcptAnswer = (address) => (address.startsWith('late') ? THROTTLING_REPLY : { accept: true });
    const router = routerWithoutRoutes(fixture.createTransport(relay.url, { connectionTimeoutMs: 10_000, socketTimeoutMs: 10_000 }));
    const routed = await router.route(ROUTED_MAIL);
    const outcome = await routed.transport.send({
      envelope: { from: 'shop@example.com', to: ['ann@example.com', 'late@example.com'] },
      raw: 'From: shop@example.com\r\nSubject: two\r\n\r\nhi\r\n',
    });
    expect(outcome).toMatchObject({ kind: 'sent', accepted: ['ann@example.com'], rejected: ['late@example.com'] });
    expect(relay.transactions).toBe(1);
    expect(routed.trail()).toBeUndefined();
    expect(router.states()[0]).toMatchObject({ state: 'throttled', ratePerSecond: expect.any(Number) });
  });
});
