/**
 * The return path (VERP, docs/bounces.md): with `BOUNCE_DOMAIN` set, every delivery's envelope sender is
 * `b-<mailId>-<hmac>@BOUNCE_DOMAIN`, so a bounce names the mail it is about in its RCPT TO. The HMAC (SHA-256 under
 * the store's `return-path` secret, 10 base32 characters = 50 bits) makes the address unguessable: nobody can
 * bounce a mail they did not receive. Pure: the secret is read once by the caller.
 */
import crypto from 'node:crypto';

export interface ReturnPathCodec {
  domain: string;
  /** The envelope sender for a mail; the same for every attempt of it (a resend too). */
  addressOf(mailId: number): string;
  /** The mail id a return path names, or undefined when it is not one of ours or its HMAC is wrong. */
  mailIdOf(address: string): number | undefined;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const HMAC_CHARS = 10;

function base32(bytes: Buffer, length: number): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5 && out.length < length) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length >= length) break;
  }
  return out;
}

export function createReturnPathCodec(secret: string, domain: string): ReturnPathCodec {
  const lowerDomain = domain.trim().toLowerCase().replace(/\.$/, '');
  const mac = (mailId: number) => base32(crypto.createHmac('sha256', secret).update(`b-${mailId}`).digest(), HMAC_CHARS);
  return {
    domain: lowerDomain,
    addressOf: (mailId) => `b-${mailId}-${mac(mailId)}@${lowerDomain}`,
    mailIdOf(address) {
      const at = address.lastIndexOf('@');
      if (at < 0 || address.slice(at + 1).toLowerCase() !== lowerDomain) return undefined;
      // Case-insensitive: some MTAs fold the local part, and the alphabet is lower-case only.
      const match = /^b-([1-9][0-9]{0,15})-([a-z2-7]{10})$/.exec(address.slice(0, at).toLowerCase());
      if (!match) return undefined;
      const mailId = Number(match[1]);
      if (!Number.isSafeInteger(mailId)) return undefined;
      const expected = Buffer.from(mac(mailId));
      const given = Buffer.from(match[2]!);
      return crypto.timingSafeEqual(expected, given) ? mailId : undefined;
    },
  };
}

/** A fresh secret for the `return-path` row of server_secrets. */
export function newReturnPathSecret(): string {
  return crypto.randomBytes(32).toString('base64url');
}
