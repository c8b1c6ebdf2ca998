/** The default relay and what goes out to it: its URL and TLS policy, DKIM, the EHLO and Message-ID name. */
import fs from 'node:fs';
import ipaddr from 'ipaddr.js';
import { isHostnameSyntax } from '../submission/mail-hostname.js';
import type { EnvReader } from './env-reader.js';

export interface RelaySettings {
  /** The provider, nodemailer URL form; undefined starts the embedded capture relay. */
  relayUrl: string | undefined;
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

export function readRelaySettings({ env, problems, url, file, onOff }: EnvReader): RelaySettings {
  const settings: RelaySettings = {
    relayUrl: url('RELAY_URL', ['smtp:', 'smtps:']),
    relayTls: 'opportunistic',
    relayTlsCaFile: file('RELAY_TLS_CA'),
    relayTlsInsecure: onOff('RELAY_TLS_INSECURE', false),
    mailHostname: env.MAIL_HOSTNAME?.trim().toLowerCase().replace(/\.$/, '') || undefined,
  };
  const relayTls = env.RELAY_TLS?.trim().toLowerCase();
  if (relayTls === 'require' || relayTls === 'opportunistic' || relayTls === 'off') settings.relayTls = relayTls;
  else if (relayTls === undefined || relayTls === '') settings.relayTls = defaultRelayTls(settings.relayUrl);
  else {
    problems.push(`RELAY_TLS must be require, opportunistic or off, got "${env.RELAY_TLS}"`);
  }
  if (settings.relayTls === 'off' && settings.relayUrl?.startsWith('smtps:')) {
    problems.push(
      'RELAY_TLS=off cannot apply to an smtps:// RELAY_URL, which is TLS from the first byte: use smtp:// or another RELAY_TLS',
    );
  }
  if (settings.relayTls === 'off' && (settings.relayTlsInsecure || settings.relayTlsCaFile !== undefined)) {
    problems.push('RELAY_TLS_CA and RELAY_TLS_INSECURE have no effect with RELAY_TLS=off: remove them or choose require or opportunistic');
  }
  if (settings.relayTlsCaFile !== undefined && fs.existsSync(settings.relayTlsCaFile)) {
    const pem = fs.readFileSync(settings.relayTlsCaFile, 'utf8');
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
      problems.push(`RELAY_TLS_CA must be a PEM file of certificates ("-----BEGIN CERTIFICATE-----"): ${settings.relayTlsCaFile}`);
    }
  }
  if (settings.mailHostname !== undefined && !isHostnameSyntax(settings.mailHostname)) {
    problems.push(`MAIL_HOSTNAME must be a host name (letters, digits, hyphens and dots), got "${env.MAIL_HOSTNAME}"`);
  }
  const dkimDomain = env.DKIM_DOMAIN?.trim().toLowerCase() || undefined;
  const dkimSelector = env.DKIM_SELECTOR?.trim() || undefined;
  const dkimKey = file('DKIM_PRIVATE_KEY_FILE');
  if (dkimDomain && dkimSelector && dkimKey) settings.dkim = { domain: dkimDomain, selector: dkimSelector, privateKeyFile: dkimKey };
  else if (dkimDomain || dkimSelector || dkimKey)
    problems.push(
      'DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE must be set together (npm run outbox -- dkim generate makes a key)',
    );
  return settings;
}
