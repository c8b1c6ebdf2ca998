/**
 * The name Outbox goes by in mail (`MAIL_HOSTNAME`, docs/operations.md#the-relay): the right-hand side of the Message-IDs
 * it creates and, in delivery/, its EHLO name. Without a configured name the host's fully qualified name
 * is used; a host with only a short name still gets unique Message-IDs (the left part is a UUID), and
 * start-up warns so the operator sets a real domain.
 */
import os from 'node:os';

/** Names that are not domains of the public DNS (RFC 2606, RFC 6761, RFC 6762, RFC 8375): fine in tests, not in mail. */
const SPECIAL_USE = /(^|\.)(local|localhost|localdomain|test|example|example\.(com|net|org)|invalid|internal|lan|home\.arpa)$/i;

/** The host name when it is fully qualified, else undefined (nodemailer would fall back to `[127.0.0.1]`). */
export function findHostFqdn(): string | undefined {
  const name = os.hostname().toLowerCase().replace(/\.$/, '');
  return name.includes('.') && !SPECIAL_USE.test(name) ? name : undefined;
}

/** RFC 1123 host name syntax: letters, digits and hyphens in dot-separated labels of 1 to 63 characters. */
export function isHostnameSyntax(name: string): boolean {
  return name.length > 0 && name.length <= 253 && name.split('.').every((label) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(label));
}

/** Whether a provider could resolve the name: at least two labels and no special-use suffix. */
export function isPublicDomain(name: string): boolean {
  return isHostnameSyntax(name) && name.includes('.') && !SPECIAL_USE.test(name) && !/^[\d.]+$/.test(name);
}

let configured: string | undefined;

/** Set once at start from MAIL_HOSTNAME (main.ts); tests may set it too. */
export function setMailHostname(name: string | undefined): void {
  configured = name;
}

/**
 * The host's own name, read once: `os.hostname()` is a system call, and this is asked for every mail
 * accepted (13 % of composing one). A host renamed while Outbox runs is seen at the next start.
 */
let hostDomain: string | undefined;

/** MAIL_HOSTNAME, else the FQDN, else the short host name: what goes after the @ of a new Message-ID. */
export function getMessageIdDomain(): string {
  return configured ?? (hostDomain ??= findHostFqdn() ?? (os.hostname().toLowerCase() || 'localhost'));
}

/** MAIL_HOSTNAME or the FQDN; undefined lets the transport greet with its own address literal. */
export function findEhloName(): string | undefined {
  return configured ?? findHostFqdn();
}
