/** The service's own settings: where it listens and keeps its data, its HTTP sockets, proxies, logs and metrics. */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { EnvReader } from './env-reader.js';

export interface ServiceSettings {
  /** null (PORT=off): no HTTP listener, for worker-only instances. 0 lets the OS choose. */
  port: number | null;
  host: string;
  dataDir: string;
  /** A postgres:// URL switches from the embedded SQLite store to PostgreSQL. */
  databaseUrl: string | undefined;
  logLevel: string;
  /**
   * TRUST_PROXY: which proxies may name the client in X-Forwarded-For. false (off, the default): the
   * socket's peer is the client. A number: that many proxies nearest the server. A list: those addresses
   * or CIDR ranges. Login limits count per client address, so behind a proxy this must be set.
   */
  trustProxy: false | number | string[];
  /** The HTTP listener's socket bounds (HTTP_HEADERS_TIMEOUT, HTTP_REQUEST_TIMEOUT, HTTP_CONNECTION_TIMEOUT, HTTP_MAX_CONNECTIONS). */
  http: HttpLimits;
  /** METRICS_TOKEN: when set, GET /metrics wants `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** IMAGE_PROXY_ALLOW_PRIVATE: the console's remote-image proxy may fetch from loopback, private and link-local addresses. */
  imageProxyAllowPrivate: boolean;
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
export const RESERVED_DESCRIPTORS = 256;

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

export function readServiceSettings(read: EnvReader): ServiceSettings {
  const { env, problems, integer, durationMs, onOff, url } = read;
  const settings: ServiceSettings = {
    port: env.PORT?.trim().toLowerCase() === 'off' ? null : integer('PORT', 8080, 0, 65535),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.DATA_DIR || './data'),
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    logLevel: env.LOG_LEVEL || 'info',
    trustProxy: readTrustProxy(read),
    http: {
      headersTimeoutMs: durationMs('HTTP_HEADERS_TIMEOUT', HTTP_LIMIT_DEFAULTS.headersTimeoutMs),
      requestTimeoutMs: durationMs('HTTP_REQUEST_TIMEOUT', HTTP_LIMIT_DEFAULTS.requestTimeoutMs),
      connectionTimeoutMs: durationMs('HTTP_CONNECTION_TIMEOUT', HTTP_LIMIT_DEFAULTS.connectionTimeoutMs),
      maxConnections: integer('HTTP_MAX_CONNECTIONS', HTTP_LIMIT_DEFAULTS.maxConnections, 1, 1_000_000),
    },
    metricsToken: env.METRICS_TOKEN || undefined,
    imageProxyAllowPrivate: onOff('IMAGE_PROXY_ALLOW_PRIVATE', false),
  };
  if (settings.http.requestTimeoutMs < settings.http.headersTimeoutMs) {
    problems.push('HTTP_REQUEST_TIMEOUT must be at least HTTP_HEADERS_TIMEOUT: it bounds the headers and the body together');
  }
  if (settings.http.connectionTimeoutMs < 20_000) {
    problems.push(
      'HTTP_CONNECTION_TIMEOUT must be at least 20s: live update streams send a keep-alive every 15 s and would be cut between them',
    );
  }
  if (settings.metricsToken !== undefined && (settings.metricsToken.length < 16 || /\s/.test(settings.metricsToken))) {
    problems.push('METRICS_TOKEN must be at least 16 characters without spaces (for example: openssl rand -hex 24)');
  }
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(settings.logLevel)) {
    problems.push(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${settings.logLevel}"`);
  }
  return settings;
}

function readTrustProxy({ env, problems }: EnvReader): false | number | string[] {
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
}
