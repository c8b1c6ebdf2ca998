/**
 * The process: configuration, store, HTTP (API + console), the delivery worker with its relay, the SMTP
 * submission listener, and a graceful shutdown of all of them. Each part is built by its own module (process/
 * holds the larger ones: delivery, the retention jobs, the SMTP listeners, the shutdown); this file only wires
 * them (the worker and the listener reuse the services, never http/).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { longestFailingEndpoint } from './webhooks/webhook.repository.js';
import { createAlertEvaluator } from './alerts/alert-evaluator.js';
import { buildApp } from './app.js';
import { systemClock, type Clock } from './clock.js';
import { ConfigError, configWarnings, loadConfig, type Config } from './config.js';
import { createHeartbeat, newInstanceId, readPackageVersion } from './instances/heartbeat.js';
import { startDelivery } from './process/delivery.js';
import { startRetentionJobs } from './process/retention-jobs.js';
import { createShutdown } from './process/shutdown.js';
import { startSmtpListeners } from './process/smtp-listeners.js';
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

  // The heartbeat's id, and the worker's: its leases name the process, so a crashed one's mails are released as
  // soon as its heartbeat is stale (delivery/lease-sweeper.ts).
  const instanceId = newInstanceId();
  // Delivery: to RELAY_URL, or to the embedded capture relay when no provider is configured.
  const delivery = config.worker ? await startDelivery(config, { store, clock, services, logger: log, instanceId }) : undefined;
  const worker = delivery?.worker;

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

  // Retention, on the instances that deliver (an API-only instance leaves it to them).
  const retentionJobs = config.worker ? startRetentionJobs(config, { store, clock, services, logger: log }) : undefined;

  const { smtpListener, bounceListener } = await startSmtpListeners(config, { clock, services, logger: log });

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
    ...(worker ? { workerLoad: () => ({ inFlight: worker.inFlight, deliveredTotal: worker.deliveredCount }) } : {}),
    ...(delivery ? { afterBeat: delivery.relayHealth.afterBeat } : {}),
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

  // Graceful: no new requests or SMTP sessions, in-flight sends finished or returned to the queue, then the store.
  const stop = createShutdown({
    app,
    store,
    bounces: services.bounces,
    delivery,
    retentionJobs,
    webhookDispatcher,
    heartbeat,
    alertEvaluator,
    smtpListener,
    bounceListener,
    logger: log,
  });
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
    relayUrl: delivery?.captureRelay?.url ?? config.relayUrl,
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
