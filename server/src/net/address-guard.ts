/**
 * Which network addresses Outbox may connect to on a stranger's behalf (webhook endpoints, the console's
 * remote-image proxy). A URL an operator types may name, or resolve to, the host itself, the private network
 * or a cloud metadata service (169.254.169.254): server-side request forgery. The check is made on the address
 * actually connected to (`guardedLookup` as the socket's `lookup`, and `checkLiteralHost` for IP literals,
 * which Node connects to without a lookup), so a name that resolves to a public address when the endpoint is
 * created and to 127.0.0.1 later (DNS rebinding) is still refused.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * True for a global unicast address only. Everything else is refused: loopback, RFC 1918 and carrier-grade
 * NAT, link-local (cloud metadata), unique-local IPv6, unspecified, broadcast, multicast, documentation and
 * reserved ranges, and IPv6 forms that carry an IPv4 address inside (IPv4-mapped ::ffff:a.b.c.d is judged as
 * that IPv4 address, and so is the deprecated IPv4-compatible ::a.b.c.d in ::/96; 6to4, Teredo and NAT64
 * prefixes are refused outright, as they can reach a private one).
 */
export function isPublicAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  // process() turns ::ffff:127.0.0.1 into 127.0.0.1, so a mapped address is judged as the IPv4 it names.
  const address = ipaddr.process(ip.replace(/%.*$/, ''));
  return embeddedIpv4(address).range() === 'unicast';
}

/**
 * ::/96 (IPv4-compatible, ::7f00:1 is ::127.0.0.1) as the IPv4 it carries: ipaddr.js calls it IPv6 unicast, and
 * a stack that still routes it reaches that IPv4 address. :: and ::1 come out as 0.0.0.0 and 0.0.0.1, refused too.
 */
function embeddedIpv4(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (address.kind() !== 'ipv6') return address;
  const parts = (address as ipaddr.IPv6).parts;
  if (parts.slice(0, 6).some((part) => part !== 0)) return address;
  const [high = 0, low = 0] = parts.slice(6);
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/**
 * Which addresses a caller may connect to: `isPublicAddress` unless a setting allows private ones, and the name
 * of that setting, so a refusal tells the operator what would allow it.
 */
export interface AddressPolicy {
  isAllowed: (ip: string) => boolean;
  /** The variable that allows private targets, e.g. `WEBHOOK_ALLOW_PRIVATE`. */
  setting: string;
}

/** The webhooks' policy, the default of the functions below. */
export const WEBHOOK_ADDRESS_POLICY: AddressPolicy = { isAllowed: isPublicAddress, setting: 'WEBHOOK_ALLOW_PRIVATE' };

/** The error of a refused address: `code` lets callers tell it from a DNS failure. */
export class AddressRefusedError extends Error {
  readonly code = 'EADDRREFUSED';
  constructor(
    readonly host: string,
    readonly address: string,
    setting = WEBHOOK_ADDRESS_POLICY.setting,
  ) {
    super(
      host === address
        ? `${address} is not a public address (loopback, private, link-local and the like are refused; ${setting}=true allows them)`
        : `${host} resolves to ${address}, which is not a public address (loopback, private, link-local and the like are refused; ${setting}=true allows them)`,
    );
    this.name = 'AddressRefusedError';
  }
}

/** Throws AddressRefusedError when `host` is an IP literal that is not public; a name passes (its lookup is guarded). */
export function checkLiteralHost(host: string, policy: AddressPolicy = WEBHOOK_ADDRESS_POLICY): void {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (net.isIP(bare) !== 0 && !policy.isAllowed(bare)) throw new AddressRefusedError(bare, bare, policy.setting);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A drop-in `lookup` for `net.connect` / an http(s) Agent: resolves as `dns.lookup` does, then refuses the
 * connection when any address the name resolves to is not public. Any, not all: with several addresses the
 * socket may try each in turn (autoSelectFamily), and a name mixing public and private answers is a rebinding
 * attempt, not an endpoint.
 */
export function guardedLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  lookupUnder(WEBHOOK_ADDRESS_POLICY, hostname, options, callback);
}

/** `guardedLookup` under another policy (the remote-image proxy's, net/remote-image-fetcher.ts). */
export function createGuardedLookup(policy: AddressPolicy): typeof guardedLookup {
  return (hostname, options, callback) => lookupUnder(policy, hostname, options, callback);
}

function lookupUnder(policy: AddressPolicy, hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '');
    const refused = addresses.find((entry) => !policy.isAllowed(entry.address));
    if (refused) return callback(Object.assign(new AddressRefusedError(hostname, refused.address, policy.setting), { errno: 0 }), '');
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
    callback(null, first.address, first.family);
  });
}

/**
 * Resolves `host` and throws AddressRefusedError when it is, or resolves to, an address that is not public;
 * for checking a URL when it is given (the connection is checked again by `guardedLookup`). A name that does
 * not resolve passes: it may exist later, and connecting to it is checked then.
 */
export async function checkHostIsPublic(host: string): Promise<void> {
  checkLiteralHost(host);
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (net.isIP(bare) !== 0) return;
  let addresses: dns.LookupAddress[];
  try {
    addresses = await dns.promises.lookup(bare, { all: true });
  } catch {
    return;
  }
  const refused = addresses.find((entry) => !isPublicAddress(entry.address));
  if (refused) throw new AddressRefusedError(bare, refused.address);
}
