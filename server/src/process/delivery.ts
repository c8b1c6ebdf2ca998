/**
 * Mail delivery as main.ts starts it where WORKER is on: the relay (RELAY_URL, or the embedded capture relay when
 * no provider is configured), the router of the named relays with its health reports, and the delivery worker,
 * woken by every new or requeued mail.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { AppServices } from '../app.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { startCaptureRelay, type CaptureRelay } from '../delivery/capture-relay.js';
import { createDkimSigner } from '../delivery/dkim.js';
import { createRelayRouter, type RelayRouter } from '../delivery/relay-router.js';
import { createRelayTransport, type RelayTransport } from '../delivery/relay-transport.js';
import { retryPolicyFromSettings } from '../delivery/retry-policy.js';
import { createDeliveryWorker, type DeliveryWorker } from '../delivery/worker.js';
import { createRelayHealthPublisher, type RelayHealthPublisher } from '../relays/relay-health-publisher.js';
import { routingDirectoryFor } from '../relays/routing-table.js';
import type { Store } from '../store/connection.js';

/**
 * How long the worker waits for the relay's next reply once connected: RFC 5321 §4.5.3.2.6's ten minutes for the
 * end of DATA (the longest of its timeouts). The lease of a send under way is renewed meanwhile (delivery/worker.ts).
 */
const RELAY_REPLY_TIMEOUT_MS = 10 * 60_000;

/** What a stop closes, in its order (process/shutdown.ts). */
export interface Delivery {
  worker: DeliveryWorker;
  relayHealth: RelayHealthPublisher;
  router: RelayRouter;
  transport: RelayTransport;
  captureRelay: CaptureRelay | undefined;
}

export interface DeliveryParts {
  store: Store;
  clock: Clock;
  services: AppServices;
  logger: FastifyBaseLogger;
  /** The heartbeat's id, and the worker's: its leases name the process (delivery/lease-sweeper.ts). */
  instanceId: string;
}

export async function startDelivery(config: Config, parts: DeliveryParts): Promise<Delivery> {
  const { store, clock, services, logger: log, instanceId } = parts;
  let captureRelay: CaptureRelay | undefined;
  let relayUrl = config.relayUrl;
  if (relayUrl === undefined) {
    captureRelay = await startCaptureRelay({ dataDir: config.dataDir, logger: log, clock });
    relayUrl = captureRelay.url;
    log.info(
      `No RELAY_URL: delivering to the embedded capture relay at ${relayUrl}, which keeps mail under ${path.join(config.dataDir, 'captured')}`,
    );
  }
  const transport = createRelayTransport(relayUrl, {
    ...(config.dkim ? { sign: createDkimSigner(config.dkim) } : {}),
    maxConnections: Math.max(1, Math.min(10, Math.ceil(config.workerConcurrency / 4))),
    // A relay that cannot be reached fails the attempt before the claimed mail's lease runs low. Once connected,
    // a relay may take its time (RFC 5321 §4.5.3.2.6 gives the end of DATA ten minutes): the worker renews the
    // lease of a send under way, so waiting never lets the sweeper hand the mail to another worker.
    connectionTimeoutMs: Math.min(30_000, (config.leaseSeconds * 1000) / 3),
    socketTimeoutMs: RELAY_REPLY_TIMEOUT_MS,
    // The capture relay is loopback without TLS; the RELAY_TLS settings are for RELAY_URL.
    ...(config.relayUrl !== undefined
      ? {
          tls: {
            mode: config.relayTls,
            insecure: config.relayTlsInsecure,
            ...(config.relayTlsCaFile ? { ca: fs.readFileSync(config.relayTlsCaFile) } : {}),
          },
        }
      : {}),
  });
  // Named relays and routes (docs/relays.md): once routes exist, each mail goes through its route's relays, with
  // failover; RELAY_URL's transport stays the default relay. RELAY_TLS_CA is trusted for every relay.
  const relayTlsCa = config.relayTlsCaFile ? fs.readFileSync(config.relayTlsCaFile) : undefined;
  const sign = config.dkim ? createDkimSigner(config.dkim) : undefined;
  // Made once the router exists: a change it reports before then has no publisher to tell.
  let relayHealth: RelayHealthPublisher | undefined = undefined;
  const router = createRelayRouter({
    directory: routingDirectoryFor(store),
    // A relay's new state is written at once, for every instance to see (docs/relays.md#health).
    onHealthChange: () => relayHealth?.changed(),
    defaultTransport: transport,
    createTransport: (relay) =>
      createRelayTransport(relay.url, {
        ...(sign ? { sign } : {}),
        maxConnections: relay.maxConnections,
        connectionTimeoutMs: Math.min(30_000, (config.leaseSeconds * 1000) / 3),
        socketTimeoutMs: RELAY_REPLY_TIMEOUT_MS,
        tls: { mode: relay.tls, ...(relayTlsCa ? { ca: relayTlsCa } : {}) },
        ...(relay.credentials ? { auth: { user: relay.credentials.username, pass: relay.credentials.password } } : {}),
      }),
    logger: log,
  });
  relayHealth = createRelayHealthPublisher({ store, clock, instanceId, reports: () => router.reports(), logger: log });
  // BOUNCE_DOMAIN: every attempt's envelope sender is the mail's return path (docs/bounces.md).
  const returnPaths = await services.bounces.returnPaths();
  const worker = createDeliveryWorker({
    store,
    clock,
    workerId: instanceId,
    transport,
    router,
    retryPolicy: retryPolicyFromSettings(config),
    concurrency: config.workerConcurrency,
    leaseMs: config.leaseSeconds * 1000,
    pollIntervalMs: config.workerIdlePollMs,
    logger: log,
    onChange: (ids) => services.mails.notify({ type: 'updated', ids }),
    ...(returnPaths ? { returnPath: (mailId: number, recipient: number) => returnPaths.addressOf(mailId, recipient) } : {}),
  });
  // A new or requeued mail starts delivery now, not at the worker's next poll, whichever instance took it.
  services.mails.onChange((change) => {
    if (change.type === 'created' || change.type === 'queued' || change.type === 'resync') worker.wake();
  });
  worker.start();
  return { worker, relayHealth, router, transport, captureRelay };
}
