/** The SMTP submission listener's settings (its per-client cap and no-progress timeout also bound the bounce listener). */
import type { EnvReader } from './env-reader.js';

export interface SmtpSettings {
  /** 0 disables the SMTP submission listener. */
  smtpPort: number;
  /** SMTP_HOST: the listener's address, loopback by default whatever HOST is. */
  smtpHost: string;
  /** Largest message the SMTP listener takes, in bytes. */
  smtpMaxMessageBytes: number;
  /** PEM files; with both set the SMTP listener offers STARTTLS. */
  smtpTlsKeyFile: string | undefined;
  smtpTlsCertFile: string | undefined;
  /** SMTP sessions open at once on the listener (SMTP_MAX_CONNECTIONS); more are answered 421. */
  smtpMaxConnections: number;
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
}

export function readSmtpSettings({ env, problems, integer, port, file, boundedDurationMs }: EnvReader): SmtpSettings {
  const settings: SmtpSettings = {
    smtpPort: port('SMTP_PORT', 2525),
    smtpHost: env.SMTP_HOST || '127.0.0.1',
    smtpMaxMessageBytes: integer('SMTP_MAX_MESSAGE_BYTES', 25 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    smtpTlsKeyFile: file('SMTP_TLS_KEY'),
    smtpTlsCertFile: file('SMTP_TLS_CERT'),
    smtpMaxConnections: integer('SMTP_MAX_CONNECTIONS', 100, 1, 100_000),
    smtpMaxConnectionsPerClient: integer('SMTP_MAX_CONNECTIONS_PER_CLIENT', 10, 1, 100_000),
    smtpNoProgressMs: boundedDurationMs('SMTP_NO_PROGRESS_TIMEOUT', 60_000, 1_000, 3_600_000, '1s to 1h'),
  };
  if ((settings.smtpTlsKeyFile === undefined) !== (settings.smtpTlsCertFile === undefined)) {
    problems.push('SMTP_TLS_KEY and SMTP_TLS_CERT must be set together');
  }
  return settings;
}
