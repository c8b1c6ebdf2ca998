/**
 * Builds the HTTP app without listening (tests call `inject`); main.ts listens. Routes get their services
 * here and never touch SQL themselves.
 */
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { createAuthService, type AuthService } from './auth/auth.service.js';
import type { LoginThrottle } from './auth/login-throttle.js';
import { systemClock, type Clock } from './clock.js';
import { createAuditService } from './audit/audit.service.js';
import { createHealthService } from './health/health.service.js';
import { createQueueHealthService } from './health/queue-health.service.js';
import { createMetricsService } from './health/metrics.service.js';
import { createInstanceService } from './instances/instance.service.js';
import { instancesRoutes } from './http/instances.routes.js';
import { createAlertService, type AlertService } from './alerts/alert.service.js';
import { DEFAULT_ALERT_SETTINGS, type AlertSettings } from './alerts/alert-rules.js';
import { alertsRoutes } from './http/alerts.routes.js';
import { createBounceService, type BounceService } from './bounces/bounce.service.js';
import { bouncesRoutes } from './http/bounces.routes.js';
import { apiDocsRoutes } from './http/api-docs.routes.js';
import { authRoutes } from './http/auth.routes.js';
import { consoleRoutes } from './http/console.routes.js';
import { clientErrorHandler, frameworkErrorHandler, registerErrorHandling, registerJsonParser } from './http/errors.js';
import { healthRoutes } from './http/health.routes.js';
import { registerInputGuards } from './http/input-guards.js';
import { registerSecurityHeaders } from './http/security-headers.js';
import { buildRequestValidator, buildResponseSerializer } from './http/schema-compilers.js';
import { bulkRoutes } from './http/bulk.routes.js';
import { eventsRoutes } from './http/events.routes.js';
import { createLiveHub, type LiveHub, type LiveHubOptions } from './live/live-hub.js';
import { auditRoutes } from './http/audit.routes.js';
import { mailRoutes } from './http/mail.routes.js';
import { queueRoutes } from './http/queue.routes.js';
import { submissionRoutes } from './http/submission.routes.js';
import { suppressionsRoutes } from './http/suppressions.routes.js';
import { statisticsRoutes } from './http/statistics.routes.js';
import { createStatisticsService, type StatisticsService } from './statistics/statistics.service.js';
import { createSuppressionService } from './suppression/suppression.service.js';
import { createApplicationReads } from './mail/application-reads.js';
import { createMailService, type MailService } from './mail/mail.service.js';
import { createContentRetention, type ContentRetention } from './mail/content-retention.js';
import { createSubmissionService, type SubmissionService } from './submission/submission.service.js';
import type { Store } from './store/connection.js';
import { HTTP_LIMIT_DEFAULTS, type HttpLimits } from './config.js';
import { webhookRoutes } from './http/webhooks.routes.js';
import { applicationsRoutes } from './http/applications.routes.js';
import { relaysRoutes } from './http/relays.routes.js';
import { createRelayService, type RelayService } from './relays/relay.service.js';
import { createRelayHealthService } from './relays/relay-health.service.js';
import { createApplicationService, type ApplicationService } from './applications/application.service.js';
import { longestFailingEndpoint } from './webhooks/webhook.repository.js';
import { createWebhookService, type WebhookService } from './webhooks/webhook.service.js';
import { createRemoteImageFetcher, REMOTE_IMAGE_DEFAULTS, type RemoteImageFetchOptions } from './net/remote-image-fetcher.js';
import { createRemoteImageService } from './remote-images/remote-image.service.js';

export interface AppOptions {
  store: Store;
  clock?: Clock;
  sessionTtlSeconds?: number;
  /** The built console (web/dist); not served when undefined. */
  consoleDir?: string | undefined;
  logger?: FastifyServerOptions['logger'];
  loginThrottle?: LoginThrottle;
  /**
   * Which proxies may name the client in X-Forwarded-For (TRUST_PROXY): a hop count or their addresses.
   * false (the default) takes the socket's address, which is what per-client login limits count.
   */
  trustProxy?: boolean | number | string[];
  /** METRICS_TOKEN: when set, GET /metrics wants `Authorization: Bearer <token>`. */
  metricsToken?: string | undefined;
  /** Live updates' timing and limits (tests shorten the intervals); defaults in live/live-hub.ts. */
  live?: Omit<LiveHubOptions, 'store' | 'auth' | 'logger'>;
  /** argon2id's memory in KiB for new password hashes: 19 MiB by default (auth/password.ts); tests pass less. */
  passwordCost?: number;
  /** Socket bounds (HTTP_* in config.ts, docs/operations.md); config.ts's defaults when left out. */
  http?: Partial<HttpLimits>;
  /** WEBHOOK_ALLOW_PRIVATE: endpoint URLs on loopback and private addresses are accepted (docs/webhooks.md). */
  webhooks?: { allowPrivate?: boolean };
  /**
   * The remote-image proxy (IMAGE_PROXY_ALLOW_PRIVATE; docs/operations.md): private targets allowed, and the
   * fetcher's bounds (net/remote-image-fetcher.ts's defaults when left out).
   */
  remoteImages?: Partial<RemoteImageFetchOptions>;
  /** Alert rules' thresholds and timing (ALERT_* variables); the defaults of alerts/alert-rules.ts otherwise. */
  alerts?: AlertSettings;
  /** BOUNCE_DOMAIN: the return paths' domain (docs/bounces.md); undefined leaves the envelope sender as submitted. */
  bounceDomain?: string | undefined;
  /** BOUNCE_UNMATCHED_KEEP: unmatched reports kept at most (docs/bounces.md#limits); 1,000 by default. */
  bounceUnmatchedKeep?: number;
  /** RETENTION_DAYS and CONTENT_RETENTION_DAYS (docs/operations.md#content-retention); 30 and 30 when left out. */
  retention?: { retentionDays: number; contentRetentionDays: number };
}

export interface AppServices {
  auth: AuthService;
  mails: MailService;
  submissions: SubmissionService;
  live: LiveHub;
  webhooks: WebhookService;
  alerts: AlertService;
  bounces: BounceService;
  /** Applications' content retention and the content purge (mail/content-retention.ts). */
  contentRetention: ContentRetention;
  applications: ApplicationService;
  statistics: StatisticsService;
  relays: RelayService;
}

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

function hopsOf(hops: number) {
  return (_address: string, hop: number) => hop < hops;
}

export async function buildApp(options: AppOptions): Promise<{ app: FastifyInstance; services: AppServices }> {
  const clock = options.clock ?? systemClock;
  // No request, however slow its client, holds a socket for ever: headers and the whole body
  // must arrive in time (then 408 and close), a socket idle that long is closed, and past the cap a new
  // connection is closed at once rather than taking a descriptor the store needs.
  const limits = { ...HTTP_LIMIT_DEFAULTS, ...options.http };
  const app = Fastify({
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: limits.connectionTimeoutMs,
    http: {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      // Node checks the two timeouts above only this often (30 s by default); a quarter of the shorter one.
      connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(limits.headersTimeoutMs / 4))),
    },
    logger: options.logger ?? false,
    // A hop count trusts that many proxies nearest the server (Fastify's types only name the function form).
    trustProxy: typeof options.trustProxy === 'number' ? hopsOf(options.trustProxy) : (options.trustProxy ?? false),
    bodyLimit: 1024 * 1024,
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    schemaController: {
      compilersFactory: {
        buildValidator: buildRequestValidator as unknown as CompilersFactory['buildValidator'],
        buildSerializer: buildResponseSerializer as unknown as CompilersFactory['buildSerializer'],
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.server.maxConnections = limits.maxConnections;
  // connectionTimeout closes a socket that is silent both ways, but not while a handler is still working on
  // its request (a bulk action by filter may run for minutes before it answers, docs/operations.md): there
  // the client is waiting for us. Once the answer is being written, a stall closes it again.
  const working = new WeakSet<object>();
  app.addHook('onRequest', (request, _reply, done) => {
    working.add(request.raw.socket);
    done();
  });
  app.addHook('onSend', (request, _reply, payload, done) => {
    working.delete(request.raw.socket);
    done(null, payload);
  });
  app.server.on('timeout', (socket: Socket) => {
    if (!working.has(socket)) socket.destroy();
  });

  const mails = createMailService({ store: options.store, clock });
  const retention = options.retention ?? { retentionDays: 30, contentRetentionDays: 30 };
  const contentRetention = createContentRetention({
    store: options.store,
    clock,
    defaultDays: retention.contentRetentionDays,
    retentionDays: retention.retentionDays,
  });
  const instances = createInstanceService({ store: options.store, clock });
  const alerts = createAlertService({
    store: options.store,
    clock,
    settings: options.alerts ?? DEFAULT_ALERT_SETTINGS,
    webhooks: { longestFailing: longestFailingEndpoint },
  });
  const relayHealth = createRelayHealthService({ store: options.store, clock });
  const metrics = createMetricsService({ mails, clock, instances, alerts, relayHealth });
  const auth = createAuthService({
    store: options.store,
    clock,
    sessionTtlSeconds: options.sessionTtlSeconds ?? 12 * 3600,
    ...(options.loginThrottle ? { throttle: options.loginThrottle } : {}),
    ...(options.passwordCost !== undefined ? { passwordCost: options.passwordCost } : {}),
    onLoginSlowed: ({ username, client, delayMs }) => {
      metrics.recordLoginSlowed();
      app.log.warn({ username, address: client, delayMs, reason: 'name_under_attack' }, 'login slowed');
    },
  });
  const submissions = createSubmissionService({ store: options.store, clock, mails });
  const webhooks = createWebhookService({ store: options.store, clock, allowPrivate: options.webhooks?.allowPrivate ?? false });
  const bounces = createBounceService({
    store: options.store,
    clock,
    bounceDomain: options.bounceDomain,
    ...(options.bounceUnmatchedKeep === undefined ? {} : { maxUnmatchedReports: options.bounceUnmatchedKeep }),
    onChange: (ids) => mails.notify({ type: 'updated', ids }),
  });
  const live = createLiveHub({ store: options.store, auth, logger: app.log, readAlerts: alerts.listRuleStatuses, ...options.live });
  // Before the server waits for its connections to end: open event streams never would by themselves.
  app.addHook('preClose', (done) => {
    live.close();
    done();
  });

  app.decorateRequest('operator', null);
  app.decorateRequest('token', null);
  app.decorateRequest('apiKey', null);
  registerJsonParser(app);
  registerErrorHandling(app);
  registerInputGuards(app);

  registerSecurityHeaders(app, {
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        // No remote image anywhere, the mail's HTML body included: "Load remote images" fetches them through the
        // server's image proxy and hands them to the body's sandboxed srcdoc frame (which inherits this policy)
        // as data: URLs (docs/console.md §10.10), so the operator's browser never connects where a mail says.
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        fontSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        // Outbox serves plain HTTP itself (TLS, when wanted, is a proxy's job): asking browsers to upgrade
        // requests would break the console for anyone reaching it over http on a LAN address.
        upgradeInsecureRequests: null,
      },
    },
    // HSTS belongs to whoever terminates TLS; sent over plain HTTP it is ignored at best.
    strictTransportSecurity: false,
    crossOriginEmbedderPolicy: false,
  });
  await app.register(swagger, {
    openapi: {
      info: { title: 'Outbox API', version: '1.0.0', description: "Outgoing mail service: submission, queue and operators' console API." },
      components: {
        securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'Token {token}' } },
      },
    },
  });

  await app.register(healthRoutes, {
    health: createHealthService(options.store),
    metrics,
    ...(options.metricsToken !== undefined ? { metricsToken: options.metricsToken } : {}),
  });
  await app.register(authRoutes, { auth, observer: metrics });
  const remoteImages = createRemoteImageService({
    mails,
    fetchImage: createRemoteImageFetcher({ allowPrivate: false, ...REMOTE_IMAGE_DEFAULTS, ...options.remoteImages }),
  });
  await app.register(mailRoutes, {
    auth,
    mails,
    applications: createApplicationReads({ store: options.store, mails }),
    bounces,
    remoteImages,
  });
  await app.register(bulkRoutes, { auth, mails });
  await app.register(auditRoutes, { auth, audit: createAuditService({ store: options.store }) });
  await app.register(queueRoutes, { auth, queueHealth: createQueueHealthService({ store: options.store, clock, instances, relayHealth }) });
  await app.register(instancesRoutes, { auth, instances });
  await app.register(alertsRoutes, { auth, alerts });
  await app.register(submissionRoutes, { auth, submissions });
  await app.register(eventsRoutes, { auth, live });
  await app.register(webhookRoutes, { auth, webhooks });
  const applications = createApplicationService({ store: options.store, clock, contentRetention });
  await app.register(applicationsRoutes, { auth, applications });
  await app.register(bouncesRoutes, { auth, bounces });
  await app.register(suppressionsRoutes, { auth, suppressions: createSuppressionService({ store: options.store, clock }) });
  const statistics = createStatisticsService({ store: options.store, clock });
  await app.register(statisticsRoutes, { auth, statistics });
  const relays = createRelayService({ store: options.store, clock });
  await app.register(relaysRoutes, { auth, relays, health: relayHealth });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(apiDocsRoutes);
  if (options.consoleDir) await app.register(consoleRoutes, { consoleDir: options.consoleDir });

  return {
    app,
    services: { auth, mails, submissions, live, webhooks, alerts, bounces, contentRetention, applications, statistics, relays },
  };
}
