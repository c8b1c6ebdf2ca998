/**
 * Configuration comes from the environment only (docs/operations.md#configuration). Every variable is validated at start;
 * every bad one is listed, then the process exits 1 (see main.ts), so an operator fixes them all at once.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { findHostFqdn, isHostnameSyntax, isPublicDomain } from './submission/mail-hostname.js';

export interface Config {
  /** null (PORT=off): no HTTP listener, for worker-only instances. 0 lets the OS choose. */
  port: number | null;
  host: string;
  dataDir: string;
  /** A postgres:// URL switches from the embedded SQLite store to PostgreSQL. */
  databaseUrl: string | undefined;
  /** The provider, nodemailer URL form; undefined starts the embedded capture relay. */
  relayUrl: string | undefined;
  /** 0 disables the SMTP submission listener. */
  smtpPort: number;
  /** SMTP_HOST: the listener's address, loopback by default whatever HOST is. */
  smtpHost: string;
  worker: boolean;
  adminUser: string | undefined;
  adminPassword: string | undefined;
  sessionTtlSeconds: number;
  /**
   * argon2id's memory for new operator password hashes, in MiB (PASSWORD_HASH_MEMORY, default 19 with 2 passes:
   * OWASP's minimum, ~30 ms of one core per login). More makes each login dearer for an attacker and for us.
   */
  passwordHashMemoryMiB: number;
  leaseSeconds: number;
  /** Sends in flight at once per worker process. */
  workerConcurrency: number;
  /** How long an idle worker sleeps before it looks for due mail again when nothing wakes it. */
  workerIdlePollMs: number;
  /** The retry budget for 4xx replies and an unreachable relay: attempts (the first included) and age. */
  retryMaxAttempts: number;
  retryMaxAgeMs: number;
  /** The first retry's delay; each further one doubles, up to an hour. */
  retryBaseDelayMs: number;
  /** Largest message the SMTP listener takes, in bytes. */
  smtpMaxMessageBytes: number;
  /** PEM files; with both set the SMTP listener offers STARTTLS. */
  smtpTlsKeyFile: string | undefined;
  smtpTlsCertFile: string | undefined;
  retentionDays: number;
  /**
   * CONTENT_RETENTION_DAYS: days a final mail's content (raw message, bodies, attachments) is kept, 0 to RETENTION_DAYS
   * (its default: the content goes with the record); 0 removes it once the mail is final (docs/operations.md#content-retention).
   * An application may have its own (`apikey content-retention`).
   */
  contentRetentionDays: number;
  /** Audit log entries older than this many days are purged with the mails (AUDIT_RETENTION_DAYS). */
  auditRetentionDays: number;
  logLevel: string;
  /**
   * TRUST_PROXY: which proxies may name the client in X-Forwarded-For. false (off, the default): the
   * socket's peer is the client. A number: that many proxies nearest the server. A list: those addresses
   * or CIDR ranges. Login limits count per client address, so behind a proxy this must be set.
   */
  trustProxy: false | number | string[];
  /**
   * STARTTLS policy towards RELAY_URL (RELAY_TLS): require, opportunistic or off. The default is require
   * when RELAY_URL carries credentials or names a host that is not loopback, else opportunistic.
   */
  relayTls: 'require' | 'opportunistic' | 'off';
  /** A PEM file of certificates trusted for the relay, besides the system's (RELAY_TLS_CA). */
  relayTlsCaFile: string | undefined;
  /** RELAY_TLS_INSECURE: encrypt without checking the relay's certificate; start-up warns. */
  relayTlsInsecure: boolean;
  /** DKIM_DOMAIN, DKIM_SELECTOR, DKIM_PRIVATE_KEY_FILE: sign every message at send time (delivery/dkim.ts); all or none. */
  dkim?: { domain: string; selector: string; privateKeyFile: string } | undefined;
  /** MAIL_HOSTNAME: EHLO name and Message-ID domain; undefined means the host's FQDN (see mail-hostname.ts). */
  mailHostname: string | undefined;
  /** SMTP sessions open at once on the listener (SMTP_MAX_CONNECTIONS); more are answered 421. */
  smtpMaxConnections: number;
  /** HEARTBEAT_INTERVAL and INSTANCE_STALE_AFTER (5 s, 15 s): this process's heartbeat (instances/heartbeat.ts). */
  heartbeatIntervalMs: number;
  instanceStaleAfterMs: number;
  /** The HTTP listener's socket bounds (HTTP_HEADERS_TIMEOUT, HTTP_REQUEST_TIMEOUT, HTTP_CONNECTION_TIMEOUT, HTTP_MAX_CONNECTIONS). */
  http: HttpLimits;
  /**
   * SMTP sessions open at once from one client (an IPv4 address or an IPv6 /64) on either listener
   * (SMTP_MAX_CONNECTIONS_PER_CLIENT); more are answered 421.
   */
  smtpMaxConnectionsPerClient: number;
  /**
   * SMTP_NO_PROGRESS_TIMEOUT: a session that makes no progress this long (no AUTH on the submission listener, no
   * report handed over on the bounce listener; NOOP and RSET do not count) is answered 421 and closed.
   */
  smtpNoProgressMs: number;
  /** METRICS_TOKEN: when set, GET /metrics wants `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** WEBHOOKS: whether this process delivers webhooks (it also needs WORKER on); docs/webhooks.md. */
  webhooks: boolean;
  /** WEBHOOK_TIMEOUT: one delivery attempt, connection to the end of the answer. */
  webhookTimeoutMs: number;
  /** WEBHOOK_RETRY_SCHEDULE: the delay before each attempt of a delivery, the first included. */
  webhookRetrySchedule: number[];
  /** WEBHOOK_ALLOW_PRIVATE: endpoints on loopback, private and link-local addresses are allowed. */
  webhookAllowPrivate: boolean;
  /** IMAGE_PROXY_ALLOW_PRIVATE: the console's remote-image proxy may fetch from loopback, private and link-local addresses. */
  imageProxyAllowPrivate: boolean;
  /** WEBHOOK_CONCURRENCY: webhook requests in flight at once per process. */
  webhookConcurrency: number;
  /** The ALERT_* variables: alert rules' thresholds and timing (alerts/alert-rules.ts, docs/alerts.md). */
  alerts: AlertConfig;
  /** BOUNCE_DOMAIN: deliveries use the return path b-<mailId>-<hmac>@BOUNCE_DOMAIN (docs/bounces.md); undefined: off. */
  bounceDomain: string | undefined;
  /** BOUNCE_SMTP_PORT: the bounce listener; 0 (the default) runs none. BOUNCE_SMTP_HOST: its address, 127.0.0.1. */
  bounceSmtpPort: number;
  bounceSmtpHost: string;
  /** BOUNCES=off: this instance runs no bounce listener even with BOUNCE_SMTP_PORT set (like WORKER). */
  bounces: boolean;
  /** BOUNCE_UNMATCHED_KEEP: unmatched reports kept at most, the oldest deleted first (docs/bounces.md#limits). */
  bounceUnmatchedKeep: number;
}

/** The shape of alerts/alert-rules.ts's AlertSettings (config.ts imports nothing of the project). */
export interface AlertConfig {
  enabled: boolean;
  intervalMs: number;
  pendingMs: number;
  cooldownMs: number;
  windowMs: number;
  minAttempts: number;
  failureRate: number;
  oldestDueMs: number;
  noWorkerForMs: number;
  bounceRate: number;
  webhookFailingMs: number;
  relayDownForMs: number;
  relayQuota: number;
}

/** Bounds on the HTTP listener's sockets (docs/operations.md#configuration). */
export interface HttpLimits {
  /** A request's headers must have arrived this long after it started; also closes a socket that sends nothing. */
  headersTimeoutMs: number;
  /** The whole request, headers and body, must have arrived this long after it started (then 408 and close). */
  requestTimeoutMs: number;
  /** A socket with no traffic either way for this long is closed. Above the live streams' 15 s keep-alive. */
  connectionTimeoutMs: number;
  /** Connections open at once; past it a new one is closed at once. */
  maxConnections: number;
}

/** Descriptors kept back from HTTP_MAX_CONNECTIONS's default for the store, the SMTP listener, the relay and logs. */
const RESERVED_DESCRIPTORS = 256;

/** The soft limit on open files of this process (Linux /proc), or undefined where it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    if (!match) return undefined;
    return match[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(match[1]);
  } catch {
    return undefined;
  }
}

export const HTTP_LIMIT_DEFAULTS: HttpLimits = {
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  connectionTimeoutMs: 120_000,
  maxConnections: Math.max(64, Math.min(4_096, (openFileLimit() ?? 4_096 + RESERVED_DESCRIPTORS) - RESERVED_DESCRIPTORS)),
};

/**
 * Settings that are valid but risky, logged at warn on every start (main.ts) rather than refused, because
 * a laptop or a test run has good reasons for them.
 */
export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  const fileLimit = openFileLimit();
  if (fileLimit !== undefined && config.http.maxConnections > fileLimit - RESERVED_DESCRIPTORS) {
    warnings.push(
      `HTTP_MAX_CONNECTIONS=${config.http.maxConnections} leaves fewer than ${RESERVED_DESCRIPTORS} of this process's ${fileLimit} open files for the store and the relay: raise the limit (ulimit -n, LimitNOFILE=) or lower HTTP_MAX_CONNECTIONS`,
    );
  }
  if (config.relayTlsInsecure) {
    warnings.push(
      "RELAY_TLS_INSECURE=on: the relay's certificate is not checked, so anyone on the path to it can read and change mail; trust its CA with RELAY_TLS_CA instead",
    );
  }
  if (config.relayTls === 'off' && config.relayUrl !== undefined) {
    const relay = new URL(config.relayUrl);
    if (relay.username !== '') {
      warnings.push(
        'RELAY_TLS=off with credentials in RELAY_URL: the relay password and every mail cross the network unencrypted; use RELAY_TLS=require or smtps://',
      );
    } else if (!isLoopbackHost(relay.hostname)) {
      warnings.push(
        `RELAY_TLS=off towards ${relay.hostname}: every mail crosses the network unencrypted; use RELAY_TLS=require or smtps://`,
      );
    }
  }
  if (config.smtpPort !== 0 && !isLoopbackHost(config.smtpHost) && config.smtpTlsKeyFile === undefined) {
    warnings.push(
      `SMTP_HOST=${config.smtpHost} without SMTP_TLS_KEY and SMTP_TLS_CERT: SMTP clients send their API key in clear over the network; configure TLS or listen on loopback`,
    );
  }
  if (typeof config.trustProxy === 'number' && !isLoopbackHost(config.host)) {
    warnings.push(
      `TRUST_PROXY=${config.trustProxy} with HOST=${config.host}: a client that reaches Outbox without the proxy can name any address in X-Forwarded-For and walk past the per-address login limits; listen on loopback behind the proxy, or list the proxies' addresses in TRUST_PROXY`,
    );
  }
  const name = config.mailHostname ?? findHostFqdn();
  if (name === undefined) {
    warnings.push(
      `MAIL_HOSTNAME is not set and the host name "${os.hostname()}" is not fully qualified: Outbox greets the relay with its address literal and Message-IDs end in @${os.hostname()}; set MAIL_HOSTNAME to a domain of yours`,
    );
  } else if (!isPublicDomain(name)) {
    warnings.push(`MAIL_HOSTNAME "${name}" is not a domain of the public DNS: providers may distrust the EHLO name and Message-IDs`);
  }
  return warnings;
}

/** True for `localhost` and loopback addresses (127.0.0.0/8, ::1, ::ffff:127.x), with or without brackets. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  return ipaddr.isValid(bare) && ipaddr.process(bare).range() === 'loopback';
}

/**
 * RELAY_TLS when it is not set: a path that leaves the machine, or a login, must not depend on the relay
 * offering STARTTLS, which anyone on the path can strip from its EHLO reply (docs/operations.md#the-relay).
 */
export function defaultRelayTls(relayUrl: string | undefined): 'require' | 'opportunistic' {
  if (relayUrl === undefined) return 'opportunistic';
  try {
    const parsed = new URL(relayUrl);
    return parsed.username === '' && parsed.password === '' && isLoopbackHost(parsed.hostname) ? 'opportunistic' : 'require';
  } catch {
    return 'require';
  }
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Parses durations like `12h`, `30m`, `90s`, `2d`, `250ms` or a bare number of seconds. */
export function parseDurationMs(value: string): number | undefined {
  const match = /^(\d+)\s*(ms|[smhd]?)$/.exec(value.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2] || 's';
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit] ?? 1000;
  return amount > 0 ? amount * factor : undefined;
}

export function parseDurationSeconds(value: string): number | undefined {
  const ms = parseDurationMs(value);
  return ms === undefined || ms % 1000 !== 0 ? undefined : ms / 1000;
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];

  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const onOff = (name: string, fallback: boolean): boolean => {
    const raw = env[name]?.trim().toLowerCase();
    if (raw === undefined || raw === '') return fallback;
    if (['on', 'true', '1', 'yes'].includes(raw)) return true;
    if (['off', 'false', '0', 'no'].includes(raw)) return false;
    problems.push(`${name} must be on or off, got "${env[name]}"`);
    return fallback;
  };
  const duration = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const seconds = parseDurationSeconds(raw);
    if (seconds === undefined) {
      problems.push(`${name} must be a duration such as 12h, 30m or 3600, got "${raw}"`);
      return fallback;
    }
    return seconds;
  };
  const durationMs = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const ms = parseDurationMs(raw);
    if (ms === undefined) {
      problems.push(`${name} must be a duration such as 30s, 250ms, 24h or 3600, got "${raw}"`);
      return fallback;
    }
    return ms;
  };
  /** A duration within [min, max]; `range` says the bounds as an operator writes them ("10ms to 1h"). */
  const boundedDurationMs = (name: string, fallback: number, min: number, max: number, range: string): number => {
    const ms = durationMs(name, fallback);
    if (ms >= min && ms <= max) return ms;
    problems.push(`${name} must be a duration from ${range}, got "${env[name]}"`);
    return fallback;
  };
  // Alerts: a pending period or cooldown of 0 is meaningful (fire at the first evaluation, no cooldown).
  const durationMsOrZero = (name: string, fallback: number): number =>
    /^0+\s*(ms|[smhd])?$/.test(env[name]?.trim() ?? '') ? 0 : durationMs(name, fallback);
  // A rate as a fraction (0.2) or a percentage (20%), above 0 and at most 1.
  const ratio = (name: string, fallback: number): number => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    const match = /^(\d+(?:\.\d+)?)(%?)$/.exec(raw);
    const value = match ? Number(match[1]) / (match[2] === '%' ? 100 : 1) : NaN;
    if (!(value > 0 && value <= 1)) {
      problems.push(`${name} must be a rate above 0 and at most 1, as a fraction (0.2) or a percentage (20%), got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const file = (name: string): string | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const resolved = path.resolve(raw);
    if (!fs.existsSync(resolved)) problems.push(`${name} names a file that does not exist: ${resolved}`);
    return resolved;
  };
  const url = (name: string, protocols: string[]): string | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) {
        problems.push(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}, got "${parsed.protocol}//..."`);
      }
    } catch {
      problems.push(`${name} is not a valid URL`);
    }
    return raw;
  };

  const trustProxy = (): false | number | string[] => {
    const raw = env.TRUST_PROXY?.trim();
    if (raw === undefined || raw === '' || ['off', 'false', 'no', '0'].includes(raw.toLowerCase())) return false;
    const wrong = `TRUST_PROXY must be off, a number of proxy hops (1 to 10) or a comma-separated list of proxy addresses or CIDR ranges, got "${raw}"`;
    if (/^\d+$/.test(raw)) {
      const hops = Number(raw);
      if (hops >= 1 && hops <= 10) return hops;
      problems.push(wrong);
      return false;
    }
    // "on" would believe X-Forwarded-For from anyone, so any client could name itself and walk past the
    // per-address login limits: refused on purpose; name the proxies instead.
    const entries = raw.split(',').map((entry) => entry.trim());
    const isAddressOrRange = (entry: string) => {
      const [address, bits, ...rest] = entry.split('/');
      const family = net.isIP(address ?? '');
      if (family === 0 || rest.length > 0) return false;
      if (bits === undefined) return true;
      return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
    };
    if (entries.length === 0 || !entries.every(isAddressOrRange)) {
      problems.push(wrong);
      return false;
    }
    return entries;
  };

  /** A comma-separated list of delays (`0,5s,5m,30m`); the first is normally 0 (at once). */
  const retrySchedule = (name: string, fallback: readonly number[]): number[] => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return [...fallback];
    const steps = raw.split(',').map((part) => part.trim());
    const delays = steps.map((step) => (/^0+(ms|s)?$/.test(step) ? 0 : parseDurationMs(step)));
    if (delays.some((delay) => delay === undefined) || delays.length > 50) {
      problems.push(`${name} must be a comma-separated list of up to 50 durations such as 0,5s,5m,30m,2h, got "${raw}"`);
      return [...fallback];
    }
    return delays as number[];
  };

  const adminUser = env.OUTBOX_ADMIN_USER || undefined;
  const adminPassword = env.OUTBOX_ADMIN_PASSWORD || undefined;
  if (adminUser && !adminPassword) problems.push('OUTBOX_ADMIN_PASSWORD must be set when OUTBOX_ADMIN_USER is');
  if (adminPassword && !adminUser) problems.push('OUTBOX_ADMIN_USER must be set when OUTBOX_ADMIN_PASSWORD is');
  // Refused rather than ignored, so that nobody believes a setting still applies (passwords are hashed with argon2id now).
  if (env.PASSWORD_HASH_COST !== undefined) {
    problems.push(
      'PASSWORD_HASH_COST is no longer read: passwords are hashed with argon2id; set PASSWORD_HASH_MEMORY (MiB, 19–1024) instead, or remove it',
    );
  }

  const config: Config = {
    port: env.PORT?.trim().toLowerCase() === 'off' ? null : integer('PORT', 8080, 0, 65535),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.DATA_DIR || './data'),
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    relayUrl: url('RELAY_URL', ['smtp:', 'smtps:']),
    smtpPort: env.SMTP_PORT?.trim().toLowerCase() === 'off' ? 0 : integer('SMTP_PORT', 2525, 0, 65535),
    smtpHost: env.SMTP_HOST || '127.0.0.1',
    worker: onOff('WORKER', true),
    adminUser,
    adminPassword,
    sessionTtlSeconds: duration('SESSION_TTL', 12 * 3600),
    passwordHashMemoryMiB: integer('PASSWORD_HASH_MEMORY', 19, 19, 1024),
    leaseSeconds: integer('LEASE_SECONDS', 60, 1, 86400),
    workerConcurrency: integer('WORKER_CONCURRENCY', 50, 1, 1000),
    workerIdlePollMs: boundedDurationMs('WORKER_IDLE_POLL', 1_000, 10, 60_000, '10ms to 60s'),
    retryMaxAttempts: integer('RETRY_MAX_ATTEMPTS', 8, 1, 1000),
    retryMaxAgeMs: durationMs('RETRY_MAX_AGE', 24 * 3_600_000),
    retryBaseDelayMs: durationMs('RETRY_BASE_DELAY', 30_000),
    smtpMaxMessageBytes: integer('SMTP_MAX_MESSAGE_BYTES', 25 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    smtpTlsKeyFile: file('SMTP_TLS_KEY'),
    smtpTlsCertFile: file('SMTP_TLS_CERT'),
    retentionDays: integer('RETENTION_DAYS', 30, 1, 36500),
    // Its default is RETENTION_DAYS, known only once that is read: filled in below.
    contentRetentionDays: integer('CONTENT_RETENTION_DAYS', -1, 0, 36500),
    auditRetentionDays: integer('AUDIT_RETENTION_DAYS', 365, 1, 36500),
    logLevel: env.LOG_LEVEL || 'info',
    trustProxy: trustProxy(),
    relayTls: 'opportunistic',
    relayTlsCaFile: file('RELAY_TLS_CA'),
    relayTlsInsecure: onOff('RELAY_TLS_INSECURE', false),
    mailHostname: env.MAIL_HOSTNAME?.trim().toLowerCase().replace(/\.$/, '') || undefined,
    smtpMaxConnections: integer('SMTP_MAX_CONNECTIONS', 100, 1, 100_000),
    heartbeatIntervalMs: durationMs('HEARTBEAT_INTERVAL', 5_000),
    instanceStaleAfterMs: durationMs('INSTANCE_STALE_AFTER', 15_000),
    http: {
      headersTimeoutMs: durationMs('HTTP_HEADERS_TIMEOUT', HTTP_LIMIT_DEFAULTS.headersTimeoutMs),
      requestTimeoutMs: durationMs('HTTP_REQUEST_TIMEOUT', HTTP_LIMIT_DEFAULTS.requestTimeoutMs),
      connectionTimeoutMs: durationMs('HTTP_CONNECTION_TIMEOUT', HTTP_LIMIT_DEFAULTS.connectionTimeoutMs),
      maxConnections: integer('HTTP_MAX_CONNECTIONS', HTTP_LIMIT_DEFAULTS.maxConnections, 1, 1_000_000),
    },
    smtpMaxConnectionsPerClient: integer('SMTP_MAX_CONNECTIONS_PER_CLIENT', 10, 1, 100_000),
    smtpNoProgressMs: boundedDurationMs('SMTP_NO_PROGRESS_TIMEOUT', 60_000, 1_000, 3_600_000, '1s to 1h'),
    metricsToken: env.METRICS_TOKEN || undefined,
    webhooks: onOff('WEBHOOKS', true),
    webhookTimeoutMs: durationMs('WEBHOOK_TIMEOUT', 10_000),
    // Svix's schedule; webhooks/webhook-policy.ts holds the same list for callers without config.
    webhookRetrySchedule: retrySchedule(
      'WEBHOOK_RETRY_SCHEDULE',
      [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    ),
    webhookAllowPrivate: onOff('WEBHOOK_ALLOW_PRIVATE', false),
    webhookConcurrency: integer('WEBHOOK_CONCURRENCY', 32, 1, 1000),
    imageProxyAllowPrivate: onOff('IMAGE_PROXY_ALLOW_PRIVATE', false),
    alerts: {
      enabled: onOff('ALERTS', true),
      intervalMs: durationMs('ALERT_EVALUATION_INTERVAL', 30_000),
      pendingMs: durationMsOrZero('ALERT_PENDING', 60_000),
      cooldownMs: durationMsOrZero('ALERT_COOLDOWN', 600_000),
      windowMs: durationMs('ALERT_WINDOW', 900_000),
      minAttempts: integer('ALERT_MIN_ATTEMPTS', 20, 1, 1_000_000),
      failureRate: ratio('ALERT_FAILURE_RATE', 0.2),
      oldestDueMs: durationMs('ALERT_OLDEST_DUE', 600_000),
      noWorkerForMs: durationMsOrZero('ALERT_NO_WORKER_FOR', 60_000),
      bounceRate: ratio('ALERT_BOUNCE_RATE', 0.05),
      webhookFailingMs: durationMs('ALERT_WEBHOOK_FAILING_FOR', 3_600_000),
      relayDownForMs: durationMsOrZero('ALERT_RELAY_DOWN_FOR', 60_000),
      relayQuota: ratio('ALERT_RELAY_QUOTA', 0.9),
    },
    bounceDomain: env.BOUNCE_DOMAIN?.trim().toLowerCase().replace(/\.$/, '') || undefined,
    bounceSmtpPort: env.BOUNCE_SMTP_PORT?.trim().toLowerCase() === 'off' ? 0 : integer('BOUNCE_SMTP_PORT', 0, 0, 65535),
    bounceSmtpHost: env.BOUNCE_SMTP_HOST?.trim() || '127.0.0.1',
    bounces: onOff('BOUNCES', true),
    bounceUnmatchedKeep: integer('BOUNCE_UNMATCHED_KEEP', 1_000, 10, 100_000),
  };
  if (config.contentRetentionDays === -1) config.contentRetentionDays = config.retentionDays;
  else if (config.contentRetentionDays > config.retentionDays) {
    // Refused rather than capped: the record, and its content with it, is deleted at RETENTION_DAYS.
    problems.push(
      `CONTENT_RETENTION_DAYS must be at most RETENTION_DAYS (${config.retentionDays}): a mail's content is deleted with its record at RETENTION_DAYS, got "${env.CONTENT_RETENTION_DAYS}"`,
    );
    config.contentRetentionDays = config.retentionDays;
  }
  if (config.http.requestTimeoutMs < config.http.headersTimeoutMs) {
    problems.push('HTTP_REQUEST_TIMEOUT must be at least HTTP_HEADERS_TIMEOUT: it bounds the headers and the body together');
  }
  if (config.http.connectionTimeoutMs < 20_000) {
    problems.push(
      'HTTP_CONNECTION_TIMEOUT must be at least 20s: live update streams send a keep-alive every 15 s and would be cut between them',
    );
  }
  if (config.metricsToken !== undefined && (config.metricsToken.length < 16 || /\s/.test(config.metricsToken))) {
    problems.push('METRICS_TOKEN must be at least 16 characters without spaces (for example: openssl rand -hex 24)');
  }
  if (config.webhookTimeoutMs > 120_000) problems.push(`WEBHOOK_TIMEOUT must be at most 120s, got "${env.WEBHOOK_TIMEOUT}"`);
  if (config.bounceDomain !== undefined && !isHostnameSyntax(config.bounceDomain)) {
    problems.push(`BOUNCE_DOMAIN must be a domain (letters, digits, hyphens and dots), got "${env.BOUNCE_DOMAIN}"`);
  }
  // Without the domain no RCPT could ever be a valid return path: the listener would refuse every report.
  if (config.bounceSmtpPort !== 0 && config.bounceDomain === undefined) {
    problems.push('BOUNCE_SMTP_PORT needs BOUNCE_DOMAIN: the listener accepts only return paths of that domain');
  }
  if (net.isIP(config.bounceSmtpHost) === 0 && !isHostnameSyntax(config.bounceSmtpHost)) {
    problems.push(`BOUNCE_SMTP_HOST must be an IP address or a host name, got "${env.BOUNCE_SMTP_HOST}"`);
  }
  const relayTls = env.RELAY_TLS?.trim().toLowerCase();
  if (relayTls === 'require' || relayTls === 'opportunistic' || relayTls === 'off') config.relayTls = relayTls;
  else if (relayTls === undefined || relayTls === '') config.relayTls = defaultRelayTls(config.relayUrl);
  else {
    problems.push(`RELAY_TLS must be require, opportunistic or off, got "${env.RELAY_TLS}"`);
  }
  if (config.relayTls === 'off' && config.relayUrl?.startsWith('smtps:')) {
    problems.push(
      'RELAY_TLS=off cannot apply to an smtps:// RELAY_URL, which is TLS from the first byte: use smtp:// or another RELAY_TLS',
    );
  }
  if (config.relayTls === 'off' && (config.relayTlsInsecure || config.relayTlsCaFile !== undefined)) {
    problems.push('RELAY_TLS_CA and RELAY_TLS_INSECURE have no effect with RELAY_TLS=off: remove them or choose require or opportunistic');
  }
  if (config.relayTlsCaFile !== undefined && fs.existsSync(config.relayTlsCaFile)) {
    const pem = fs.readFileSync(config.relayTlsCaFile, 'utf8');
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
      problems.push(`RELAY_TLS_CA must be a PEM file of certificates ("-----BEGIN CERTIFICATE-----"): ${config.relayTlsCaFile}`);
    }
  }
  if (config.mailHostname !== undefined && !isHostnameSyntax(config.mailHostname)) {
    problems.push(`MAIL_HOSTNAME must be a host name (letters, digits, hyphens and dots), got "${env.MAIL_HOSTNAME}"`);
  }
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(config.logLevel)) {
    problems.push(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${config.logLevel}"`);
  }
  if ((config.smtpTlsKeyFile === undefined) !== (config.smtpTlsCertFile === undefined)) {
    problems.push('SMTP_TLS_KEY and SMTP_TLS_CERT must be set together');
  }
  // One late beat must not make a live instance look stopped.
  if (config.instanceStaleAfterMs < 2 * config.heartbeatIntervalMs) {
    problems.push(
      `INSTANCE_STALE_AFTER must be at least twice HEARTBEAT_INTERVAL (3 times is the default: 15s and 5s), got ${config.instanceStaleAfterMs} ms and ${config.heartbeatIntervalMs} ms`,
    );
  }
  const dkimDomain = env.DKIM_DOMAIN?.trim().toLowerCase() || undefined;
  const dkimSelector = env.DKIM_SELECTOR?.trim() || undefined;
  const dkimKey = file('DKIM_PRIVATE_KEY_FILE');
  if (dkimDomain && dkimSelector && dkimKey) config.dkim = { domain: dkimDomain, selector: dkimSelector, privateKeyFile: dkimKey };
  else if (dkimDomain || dkimSelector || dkimKey)
    problems.push(
      'DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE must be set together (npm run outbox -- dkim generate makes a key)',
    );
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
