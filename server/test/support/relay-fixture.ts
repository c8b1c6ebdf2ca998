/**
 * What the relays tests open (SMTP peers standing in for providers, relay transports, a relay router) and close
 * after each test: the router first, then the transports, then the peers they sent to. Call `createRelayFixture()`
 * at the top of a file, before any `afterEach` of the file's own: after-hooks run in the reverse order of their
 * registration, so whatever the file starts on these peers (an Outbox instance) stops before they close.
 * Also the relays tests' common message, mail and rate check.
 */
import { afterEach } from 'vitest';
import { createRelayRouter, type RelayRouter } from '../../src/delivery/relay-router.js';
import { createRelayTransport, type RelayTransport } from '../../src/delivery/relay-transport.js';
import { startTestRelay, type TestRelay } from './test-relay.js';

/** The reply SES gives past its sending rate: a throttle, not a failure. */
export const THROTTLING_REPLY = { code: 454, message: '4.7.0 Throttling failure: Maximum sending rate exceeded' };

export function createRelayFixture() {
  const peers: TestRelay[] = [];
  const transports: RelayTransport[] = [];
  let router: RelayRouter | undefined;

  afterEach(async () => {
    await router?.close();
    router = undefined;
    for (const transport of transports.splice(0)) await transport.close();
    for (const peer of peers.splice(0)) await peer.close();
  });

  /** A peer on `port` (0: any free port), closed after the test. */
  async function startPeer(port = 0): Promise<TestRelay> {
    const relay = await startTestRelay(port);
    peers.push(relay);
    return relay;
  }

  return {
    startPeer,
    /**
     * A peer that takes at most `perSecond` messages in any second and gives the throttling reply past that;
     * `acceptedAt` holds when it took each (performance.now()).
     */
    async startThrottlingPeer(perSecond: number): Promise<{ relay: TestRelay; acceptedAt: number[] }> {
      const relay = await startPeer();
      const acceptedAt: number[] = [];
      relay.answer = () => {
        const now = performance.now();
        if (acceptedAt.filter((at) => now - at < 1000).length >= perSecond) return THROTTLING_REPLY;
        acceptedAt.push(now);
        return { accept: true };
      };
      return { relay, acceptedAt };
    },
    /** A relay transport, closed after the test. */
    createTransport(...args: Parameters<typeof createRelayTransport>): RelayTransport {
      const transport = createRelayTransport(...args);
      transports.push(transport);
      return transport;
    },
    /** The test's relay router (one a test), closed after the test. */
    createRouter(options: Parameters<typeof createRelayRouter>[0]): RelayRouter {
      router = createRelayRouter(options);
      return router;
    },
  };
}

/** The most messages accepted within any one second. */
export function busiestSecond(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0; i < sorted.length; i++) most = Math.max(most, sorted.filter((at) => at >= sorted[i]! && at - sorted[i]! < 1000).length);
  return most;
}

/** Message `i` as a transport sends it: one recipient, its own subject and Message-ID. */
export function testMessage(i: number) {
  return {
    envelope: { from: 'shop@example.com', to: [`user${i}@example.com`] },
    raw: `From: shop@example.com\r\nTo: user${i}@example.com\r\nSubject: m${i}\r\nMessage-ID: <m${i}@test>\r\n\r\nhi\r\n`,
  };
}

/** A mail as the router routes it: no application, the transactional lane, one recipient. */
export const ROUTED_MAIL = { apiKeyId: null, lane: 0, sender: 'shop@example.com', recipients: ['user@example.com'] };
