/**
 * The process: configuration, store, HTTP (API + console), the delivery worker with its relay, the SMTP
 * submission listener, and a graceful shutdown of all of them. Each part is built by its own module; this
 * file only wires them (the worker and the listener reuse the services, never http/).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { longestFailingEndpoint } from './webhooks/webhook.repository.js';
import { createAlertEvaluator } from './alerts/alert-evaluator.js';
import { buildApp } from './app.js';
import { createAuditRetention } from './audit/audit-retention.js';
import { CONTENT_PURGE_INTERVAL_MS } from './mail/content-retention.js';
import { systemClock, type Clock } from './clock.js';
import { ConfigError, configWarnings, loadConfig, type Config } from './config.js';
import { startCaptureRelay, type CaptureRelay } from './delivery/capture-relay.js';
import { createRelayTransport, type RelayTransport } from './delivery/relay-transport.js';
import { createRelayRouter, type RelayRouter } from './delivery/relay-router.js';
import { routingDirectoryFor } from './relays/routing-table.js';
import { createRelayHealthPublisher, type RelayHealthPublisher } from './relays/relay-health-publisher.js';
import { createDkimSigner } from './delivery/dkim.js';
import { createRetryPolicy } from './delivery/retry-policy.js';
import { createDeliveryWorker, type DeliveryWorker } from './delivery/worker.js';
import { smtpRefusalFor } from './intake/accept-errors.js';
import { startSmtpListener, type SmtpListener } from './intake/smtp-listener.js';
import { startBounceListener, type BounceListener } from './bounces/bounce-listener.js';
import { createHeartbeat, newInstanceId, readPackageVersion } from './instances/heartbeat.js';
import { setMailHostname } from './submission/mail-hostname.js';
import { openStore } from './store/connection.js';
import { createWebhookDispatcher, type WebhookDispatcher } from './webhooks/dispatcher.js';

/** server/src/main.ts (tsx) and server/dist/main.js (built) are both two folders below the repo root. */
const defaultConsoleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/dist');

export interface StartOptions {
  clock?: Clock;
  /** Where the built console is; OUTBOX_CONSOLE_DIR or web/dist by default. */
  consoleDir?: string;
}

/**
 * How long the worker waits for the relay's next reply once connected: RFC 5321 §4.5.3.2.6's ten minutes for the
 * end of DATA (the longest of its timeouts). The lease of a send under way is renewed meanwhile (delivery/worker.ts).
 */
const RELAY_REPLY_TIMEOUT_MS = 10 * 60_000;

export async function start(config: Config, options: StartOptions = {}) {
  const clock = options.clock ?? systemClock;
  const store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const { app, services } = await buildApp({
    store,
    clock,
    sessionTtlSeconds: config.sessionTtlSeconds,
    passwordCost: config.passwordHashMemoryMiB * 1024,
    consoleDir: options.consoleDir ?? process.env.OUTBOX_CONSOLE_DIR ?? defaultConsoleDir,
    logger: { level: config.logLevel },
    trustProxy: config.trustProxy,
    http: config.http,
    metricsToken: config.metricsToken,
    webhooks: { allowPrivate: config.webhookAllowPrivate },
    remoteImages: { allowPrivate: config.imageProxyAllowPrivate },
    alerts: config.alerts,
    bounceDomain: config.bounceDomain,
    bounceUnmatchedKeep: config.bounceUnmatchedKeep,
    retention: { retentionDays: config.retentionDays, contentRetentionDays: config.contentRetentionDays },
  });
  const log = app.log;
  setMailHostname(config.mailHostname);
  for (const warning of configWarnings(config)) log.warn(warning);

  const { createdAdminPassword } = await services.auth.ensureOperators({ username: config.adminUser, password: config.adminPassword });
  if (createdAdminPassword) {
    // Shown once, on purpose: there was no operator at all and none was configured. On the terminal only
    // (stderr, a plain line), never in the JSON log, which is shipped and kept elsewhere.
    process.stderr.write(
      `No operator existed: created operator "admin" with password "${createdAdminPassword}". Change it with: npm run outbox -- user passwd admin\n`,
    );
    log.warn('No operator existed: created operator "admin"; its password was written to the terminal (stderr), not to this log');
  }

  // Delivery: to RELAY_URL, or to the embedded capture relay when no provider is configured.
  let captureRelay: CaptureRelay | undefined;
  let transport: RelayTransport | undefined;
  // The heartbeat's id, and the worker's: its leases name the process, so a crashed one's mails are released as
  // soon as its heartbeat is stale (delivery/lease-sweeper.ts).
  const instanceId = newInstanceId();
  let worker: DeliveryWorker | undefined;
  let router: RelayRouter | undefined;
  let relayHealth: RelayHealthPublisher | undefined;
  if (config.worker) {
    let relayUrl = config.relayUrl;
    if (relayUrl === undefined) {
      captureRelay = await startCaptureRelay({ dataDir: config.dataDir, logger: log, clock });
      relayUrl = captureRelay.url;
      log.info(
        `No RELAY_URL: delivering to the embedded capture relay at ${relayUrl}, which keeps mail under ${path.join(config.dataDir, 'captured')}`,
      );
    }
    transport = createRelayTransport(relayUrl, {
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
    router = createRelayRouter({
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
    const reportingRouter = router;
    relayHealth = createRelayHealthPublisher({ store, clock, instanceId, reports: () => reportingRouter.reports(), logger: log });
    // BOUNCE_DOMAIN: every attempt's envelope sender is the mail's return path (docs/bounces.md).
    const returnPaths = await services.bounces.returnPaths();
    const deliveryWorker = createDeliveryWorker({
      store,
      clock,
      workerId: instanceId,
      transport,
      router,
      retryPolicy: createRetryPolicy({
        maxAttempts: config.retryMaxAttempts,
        maxAgeMs: config.retryMaxAgeMs,
        baseDelayMs: config.retryBaseDelayMs,
        maxDelayMs: Math.max(3_600_000, config.retryBaseDelayMs),
      }),
      concurrency: config.workerConcurrency,
      leaseMs: config.leaseSeconds * 1000,
      pollIntervalMs: config.workerIdlePollMs,
      logger: log,
      onChange: (ids) => services.mails.notify({ type: 'updated', ids }),
      ...(returnPaths ? { returnPath: (mailId: number, recipient: number) => returnPaths.addressOf(mailId, recipient) } : {}),
    });
    // A new or requeued mail starts delivery now, not at the worker's next poll, whichever instance took it.
    services.mails.onChange((change) => {
      if (change.type === 'created' || change.type === 'queued' || change.type === 'resync') deliveryWorker.wake();
    });
    deliveryWorker.start();
    worker = deliveryWorker;
  }

  // Every process delivers webhooks unless WEBHOOKS=off (docs/webhooks.md), not only those with WORKER on: the
  // no_worker alert must reach its receivers exactly when no process delivers mail.
  let webhookDispatcher: WebhookDispatcher | undefined;
  if (config.webhooks) {
    webhookDispatcher = createWebhookDispatcher({
      store,
      clock,
      logger: log,
      timeoutMs: config.webhookTimeoutMs,
      schedule: config.webhookRetrySchedule,
      allowPrivate: config.webhookAllowPrivate,
      concurrency: config.webhookConcurrency,
      // As long as a mail's lease, and room for at least two attempts.
      leaseMs: Math.max(config.leaseSeconds * 1000, 2 * config.webhookTimeoutMs + 5_000),
    });
    services.webhooks.onQueued(() => webhookDispatcher?.wake());
    webhookDispatcher.start();
  }

  // Retention: finished and failed mails older than RETENTION_DAYS go, at start and then hourly, on the
  // instances that deliver (an API-only instance leaves it to them). Expired sessions go with them: a
  // session past its expiry can never be used again, and nothing else would ever delete it. The hourly
  // statistics have their own 13 months.
  let retentionTimer: NodeJS.Timeout | undefined;
  const auditRetention = createAuditRetention({ store, clock });
  if (config.worker) {
    const purge = () =>
      Promise.all([
        services.mails.purgeFinishedMails(config.retentionDays, 'retention').then(
          (purged) => purged > 0 && log.info({ purged, retentionDays: config.retentionDays }, 'purged finished mails past retention'),
          (error: unknown) => log.error({ err: error }, 'retention purge failed'),
        ),
        services.auth.purgeExpiredSessions().then(
          (purged) => purged > 0 && log.info({ purged }, 'purged expired sessions'),
          (error: unknown) => log.error({ err: error }, 'expired session purge failed'),
        ),
        auditRetention.purgeAuditLog(config.auditRetentionDays).then(
          (purged) =>
            purged > 0 && log.info({ purged, auditRetentionDays: config.auditRetentionDays }, 'purged audit entries past retention'),
          (error: unknown) => log.error({ err: error }, 'audit log purge failed'),
        ),
        services.bounces.purgeReports(config.retentionDays).then(
          (purged) => purged > 0 && log.info({ purged, retentionDays: config.retentionDays }, 'purged bounce reports past retention'),
          (error: unknown) => log.error({ err: error }, 'bounce report purge failed'),
        ),
        services.webhooks.purgeLog(config.retentionDays).then(
          (purged) =>
            purged.attempts + purged.deliveries > 0 &&
            log.info({ ...purged, retentionDays: config.retentionDays }, 'purged webhook log past retention'),
          (error: unknown) => log.error({ err: error }, 'webhook log purge failed'),
        ),
        // Statistics outlive the mails: 13 months, whatever RETENTION_DAYS says.
        services.statistics.purgeStatistics().then(
          (purged) => purged > 0 && log.info({ purged }, 'purged hourly statistics older than 13 months'),
          (error: unknown) => log.error({ err: error }, 'statistics purge failed'),
        ),
      ]);
    void purge();
    retentionTimer = setInterval(() => void purge(), 3_600_000);
    retentionTimer.unref();
  }

  // Content retention: every minute, so that a retention of 0 days removes a mail's content within a minute of its
  // outcome without a write on delivery's path; a run finds nothing to do in one index seek per application
  // (docs/operations.md#content-retention). One run at a time per process.
  let contentPurgeTimer: NodeJS.Timeout | undefined;
  /** The run under way, which a stop waits for before it closes the store. */
  let contentPurgeRun: Promise<unknown> | undefined;
  if (config.worker) {
    const purgeContent = () => {
      contentPurgeRun ??= services.contentRetention
        .purgeMailContents()
        .then(
          (removed) => removed > 0 && log.info({ removed }, 'removed the content of mails past content retention'),
          (error: unknown) => log.error({ err: error }, 'content purge failed'),
        )
        .finally(() => {
          contentPurgeRun = undefined;
        });
    };
    purgeContent();
    contentPurgeTimer = setInterval(purgeContent, CONTENT_PURGE_INTERVAL_MS);
    contentPurgeTimer.unref();
  }

  // SMTP submission: the same accept path as POST /api/v1/mail, keyed by an API key as the AUTH password.
  let smtpListener: SmtpListener | undefined;
  if (config.smtpPort !== 0) {
    const tls =
      config.smtpTlsKeyFile && config.smtpTlsCertFile
        ? { key: fs.readFileSync(config.smtpTlsKeyFile), cert: fs.readFileSync(config.smtpTlsCertFile) }
        : undefined;
    smtpListener = await startSmtpListener({
      host: config.smtpHost,
      port: config.smtpPort,
      maxMessageBytes: config.smtpMaxMessageBytes,
      maxConnections: config.smtpMaxConnections,
      maxConnectionsPerClient: config.smtpMaxConnectionsPerClient,
      noProgressMs: config.smtpNoProgressMs,
      now: () => clock.now(),
      ...(tls ? { tls } : {}),
      logger: log,
      authenticate: (apiKey) => services.auth.findApiKeyPrincipal(apiKey),
      async accept(submission) {
        try {
          const mail = await services.submissions.submitRaw(submission.principal, submission);
          return { id: mail.id };
        } catch (error) {
          // A message refused or unstorable as it is fails permanently (554), a full store answers 452;
          // anything else stays a 451.
          const refusal = smtpRefusalFor(error);
          if (refusal) throw Object.assign(new Error(refusal.message), { smtpCode: refusal.smtpCode });
          throw error;
        }
      },
    });
  }

  // Bounces: the listener an MX for BOUNCE_DOMAIN points at (docs/bounces.md); BOUNCES=off leaves it to others.
  let bounceListener: BounceListener | undefined;
  const bounceReturnPaths = config.bounces && config.bounceSmtpPort !== 0 ? await services.bounces.returnPaths() : undefined;
  if (bounceReturnPaths) {
    bounceListener = await startBounceListener({
      host: config.bounceSmtpHost,
      port: config.bounceSmtpPort,
      maxConnections: config.smtpMaxConnections,
      maxConnectionsPerClient: config.smtpMaxConnectionsPerClient,
      noProgressMs: config.smtpNoProgressMs,
      now: () => clock.now(),
      logger: log,
      isReturnPath: (address) => bounceReturnPaths.parse(address) !== undefined,
      receive: (report) => services.bounces.receiveReport(report),
      hasRoom: () => services.bounces.hasRoom(),
    });
  }

  let httpPort: number | undefined;
  if (config.port !== null) {
    await app.listen({ port: config.port, host: config.host });
    const address = app.server.address();
    httpPort = address && typeof address === 'object' ? address.port : config.port;
  } else {
    await app.ready();
  }
  // Every process says it is alive every HEARTBEAT_INTERVAL (docs/operations.md#instances-and-heartbeats).
  // server/src/main.ts and server/dist/main.js both sit one folder below server/package.json.
  const delivering = worker;
  const heartbeat = createHeartbeat({
    id: instanceId,
    store,
    clock,
    roles: [
      ...(httpPort !== undefined ? (['api'] as const) : []),
      ...(worker ? (['worker'] as const) : []),
      ...(smtpListener ? (['smtp'] as const) : []),
      ...(bounceListener ? (['bounce'] as const) : []),
    ],
    version: readPackageVersion(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../package.json')),
    intervalMs: config.heartbeatIntervalMs,
    staleAfterMs: config.instanceStaleAfterMs,
    ...(delivering ? { workerLoad: () => ({ inFlight: delivering.inFlight, deliveredTotal: delivering.deliveredCount }) } : {}),
    ...(relayHealth ? { afterBeat: relayHealth.afterBeat } : {}),
    logger: log,
  });
  await heartbeat.start();
  // Every instance tries each round; the store lets one evaluate (docs/alerts.md). After the heartbeat, so a
  // worker starting with this process is already live for the no-worker rule's first round.
  const alertEvaluator = createAlertEvaluator({
    store,
    clock,
    settings: config.alerts,
    logger: log,
    webhooks: { longestFailing: longestFailingEndpoint },
  });
  alertEvaluator.start();
  const parts = {
    instanceId: heartbeat.id,
    store: store.engine,
    dataDir: store.file ? config.dataDir : undefined,
    worker: config.worker,
    smtpPort: smtpListener?.port ?? null,
    httpPort: httpPort ?? null,
  };
  log.info(
    parts,
    httpPort === undefined ? 'Outbox running without HTTP (PORT=off)' : `Outbox console and API on http://${config.host}:${httpPort}`,
  );

  let stopping: Promise<void> | undefined;
  /** Graceful: no new requests or SMTP sessions, in-flight sends finished or returned to the queue, then the store. */
  const stop = () => {
    stopping ??= (async () => {
      log.info('shutting down: no new requests or submissions, finishing what is in flight');
      if (retentionTimer) clearInterval(retentionTimer);
      if (contentPurgeTimer) clearInterval(contentPurgeTimer);
      await alertEvaluator.stop();
      await Promise.all([app.close(), smtpListener?.close(), bounceListener?.close()]);
      await services.bounces.idle();
      await worker?.stop();
      await webhookDispatcher?.stop();
      await relayHealth?.stop();
      // Only now: a worker finishing its sends is still a worker, and the row's going tells the fleet at once (its relay
      // health rows go with it).
      await heartbeat.stop();
      await router?.close();
      await transport?.close();
      await captureRelay?.close();
      await contentPurgeRun;
      await store.close();
    })();
    return stopping;
  };
  return {
    app,
    store,
    services,
    worker,
    heartbeat,
    webhookDispatcher,
    alertEvaluator,
    httpPort,
    smtpPort: smtpListener?.port,
    bounceSmtpPort: bounceListener?.port,
    relayUrl: captureRelay?.url ?? config.relayUrl,
    stop,
  };
}

export type RunningOutbox = Awaited<ReturnType<typeof start>>;

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const running = await start(config);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      running.stop().then(
        () => process.exit(0),
        (error: unknown) => {
          console.error(error);
          process.exit(1);
        },
      );
    });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
