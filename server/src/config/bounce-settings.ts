/** Bounces and complaints (docs/bounces.md): the return-path domain and the bounce listener. */
import net from 'node:net';
import { isHostnameSyntax } from '../submission/mail-hostname.js';
import type { EnvReader } from './env-reader.js';

export interface BounceSettings {
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

export function readBounceSettings({ env, problems, port, onOff, integer }: EnvReader): BounceSettings {
  const settings: BounceSettings = {
    bounceDomain: env.BOUNCE_DOMAIN?.trim().toLowerCase().replace(/\.$/, '') || undefined,
    bounceSmtpPort: port('BOUNCE_SMTP_PORT', 0),
    bounceSmtpHost: env.BOUNCE_SMTP_HOST?.trim() || '127.0.0.1',
    bounces: onOff('BOUNCES', true),
    bounceUnmatchedKeep: integer('BOUNCE_UNMATCHED_KEEP', 1_000, 10, 100_000),
  };
  if (settings.bounceDomain !== undefined && !isHostnameSyntax(settings.bounceDomain)) {
    problems.push(`BOUNCE_DOMAIN must be a domain (letters, digits, hyphens and dots), got "${env.BOUNCE_DOMAIN}"`);
  }
  // Without the domain no RCPT could ever be a valid return path: the listener would refuse every report.
  if (settings.bounceSmtpPort !== 0 && settings.bounceDomain === undefined) {
    problems.push('BOUNCE_SMTP_PORT needs BOUNCE_DOMAIN: the listener accepts only return paths of that domain');
  }
  if (net.isIP(settings.bounceSmtpHost) === 0 && !isHostnameSyntax(settings.bounceSmtpHost)) {
    problems.push(`BOUNCE_SMTP_HOST must be an IP address or a host name, got "${env.BOUNCE_SMTP_HOST}"`);
  }
  return settings;
}
