/**
 * Configuration comes from the environment only (docs/operations.md#configuration). Every variable is validated at start;
 * every bad one is listed, then the process exits 1 (see main.ts), so an operator fixes them all at once.
 * Each area's variables, defaults and checks are in config/<area>-settings.ts; this file puts them together.
 */
import os from 'node:os';
import { findHostFqdn, isPublicDomain } from './submission/mail-hostname.js';
import { readAlertSettings, type AlertConfig } from './config/alert-settings.js';
import { readAuthSettings, type AuthSettings } from './config/auth-settings.js';
import { readBounceSettings, type BounceSettings } from './config/bounce-settings.js';
import { createEnvReader, type Env } from './config/env-reader.js';
import { readInstanceSettings, type InstanceSettings } from './config/instance-settings.js';
import { isLoopbackHost, readRelaySettings, type RelaySettings } from './config/relay-settings.js';
import { readRetentionSettings, type RetentionSettings } from './config/retention-settings.js';
import { openFileLimit, readServiceSettings, RESERVED_DESCRIPTORS, type ServiceSettings } from './config/service-settings.js';
import { readSmtpSettings, type SmtpSettings } from './config/smtp-settings.js';
import { readWebhookSettings, type WebhookSettings } from './config/webhook-settings.js';
import { readWorkerSettings, type WorkerSettings } from './config/worker-settings.js';

export { HTTP_LIMIT_DEFAULTS, type HttpLimits } from './config/service-settings.js';
export { isLoopbackHost } from './config/relay-settings.js';

export type Config = ServiceSettings &
  AuthSettings &
  SmtpSettings &
  WorkerSettings &
  RelaySettings &
  RetentionSettings &
  InstanceSettings &
  WebhookSettings & { alerts: AlertConfig } & BounceSettings;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const read = createEnvReader(env, problems);
  const config: Config = {
    ...readServiceSettings(read),
    ...readAuthSettings(read),
    ...readSmtpSettings(read),
    ...readWorkerSettings(read),
    ...readRelaySettings(read),
    ...readRetentionSettings(read),
    ...readInstanceSettings(read),
    ...readWebhookSettings(read),
    ...readAlertSettings(read),
    ...readBounceSettings(read),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

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
