/**
 * Configuration comes from the environment only (PRODUCT.md §3). Every variable is validated at start;
 * every bad one is listed, then the process exits 1 (see main.ts), so an operator fixes them all at once.
 */
import path from 'node:path';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** A postgres:// URL switches from the embedded SQLite store to PostgreSQL. */
  databaseUrl: string | undefined;
  /** The provider, nodemailer URL form; undefined starts the embedded capture relay. */
  relayUrl: string | undefined;
  /** 0 disables the SMTP submission listener. */
  smtpPort: number;
  smtpHost: string;
  worker: boolean;
  adminUser: string | undefined;
  adminPassword: string | undefined;
  sessionTtlSeconds: number;
  leaseSeconds: number;
  retentionDays: number;
  logLevel: string;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Parses durations like `12h`, `30m`, `90s`, `2d` or a bare number of seconds. */
export function parseDurationSeconds(value: string): number | undefined {
  const match = /^(\d+)\s*([smhd]?)$/.exec(value.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2] || 's';
  const factor = { s: 1, m: 60, h: 3600, d: 86400 }[unit] ?? 1;
  return amount > 0 ? amount * factor : undefined;
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

  const adminUser = env.OUTBOX_ADMIN_USER || undefined;
  const adminPassword = env.OUTBOX_ADMIN_PASSWORD || undefined;
  if (adminUser && !adminPassword) problems.push('OUTBOX_ADMIN_PASSWORD must be set when OUTBOX_ADMIN_USER is');
  if (adminPassword && !adminUser) problems.push('OUTBOX_ADMIN_USER must be set when OUTBOX_ADMIN_PASSWORD is');

  const config: Config = {
    port: integer('PORT', 8080, 0, 65535),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.DATA_DIR || './data'),
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    relayUrl: url('RELAY_URL', ['smtp:', 'smtps:']),
    smtpPort: integer('SMTP_PORT', 2525, 0, 65535),
    smtpHost: env.SMTP_HOST || env.HOST || '127.0.0.1',
    worker: onOff('WORKER', true),
    adminUser,
    adminPassword,
    sessionTtlSeconds: duration('SESSION_TTL', 12 * 3600),
    leaseSeconds: integer('LEASE_SECONDS', 60, 1, 86400),
    retentionDays: integer('RETENTION_DAYS', 30, 1, 36500),
    logLevel: env.LOG_LEVEL || 'info',
  };
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(config.logLevel)) {
    problems.push(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${config.logLevel}"`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
