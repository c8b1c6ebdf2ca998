/**
 * The return path (VERP, docs/bounces.md): with `BOUNCE_DOMAIN` set, every recipient of a delivery gets an envelope
 * of its own whose sender is `b-<mailId>-<recipient>-<hmac>@BOUNCE_DOMAIN`, so a bounce names the mail and the one
 * recipient it is about in its RCPT TO. `<recipient>` is the recipient's place among the mail's distinct envelope
 * addresses, in stored order (never the address: a local part is at most 64 characters, and the address would be
 * in every Return-Path the recipient's mailbox shows). The HMAC (SHA-256 under the store's `return-path` secret, 10
 * base32 characters = 50 bits) makes the address unguessable: nobody can bounce for a recipient whose mail they did
 * not receive. The earlier per-mail form `b-<mailId>-<hmac>` is still read, for mails sent before the change
 * (`recipient` undefined). Pure: the secret is read once by the caller.
 */
import crypto from 'node:crypto';

export interface ReturnPath {
  mailId: number;
  /** The recipient's place among the mail's distinct envelope addresses; undefined for the earlier per-mail form. */
  recipient: number | undefined;
}

export interface ReturnPathCodec {
  domain: string;
  /** The envelope sender for one recipient of a mail; the same for every attempt of it (a resend too). */
  addressOf(mailId: number, recipient: number): string;
  /** What a return path names, or undefined when it is not one of ours or its HMAC is wrong. */
  parse(address: string): ReturnPath | undefined;
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
  const mac = (text: string) => base32(crypto.createHmac('sha256', secret).update(text).digest(), HMAC_CHARS);
  const matches = (text: string, given: string) => crypto.timingSafeEqual(Buffer.from(mac(text)), Buffer.from(given));
  return {
    domain: lowerDomain,
    addressOf: (mailId, recipient) => `b-${mailId}-${recipient}-${mac(`b-${mailId}-${recipient}`)}@${lowerDomain}`,
    parse(address) {
      const at = address.lastIndexOf('@');
      if (at < 0 || address.slice(at + 1).toLowerCase() !== lowerDomain) return undefined;
      // Case-insensitive: some MTAs fold the local part, and the alphabet is lower-case only.
      const local = address.slice(0, at).toLowerCase();
      const perRecipient = /^b-([1-9][0-9]{0,15})-(0|[1-9][0-9]{0,4})-([a-z2-7]{10})$/.exec(local);
      if (perRecipient) {
        const mailId = Number(perRecipient[1]);
        const recipient = Number(perRecipient[2]);
        if (!Number.isSafeInteger(mailId)) return undefined;
        return matches(`b-${mailId}-${recipient}`, perRecipient[3]!) ? { mailId, recipient } : undefined;
      }
      const perMail = /^b-([1-9][0-9]{0,15})-([a-z2-7]{10})$/.exec(local);
      if (!perMail) return undefined;
      const mailId = Number(perMail[1]);
      if (!Number.isSafeInteger(mailId)) return undefined;
      return matches(`b-${mailId}`, perMail[2]!) ? { mailId, recipient: undefined } : undefined;
    },
  };
}

/** The per-mail return path of earlier releases, for tests of reports about mails sent before the change. */
export function legacyReturnPath(secret: string, domain: string, mailId: number): string {
  const mac = base32(crypto.createHmac('sha256', secret).update(`b-${mailId}`).digest(), HMAC_CHARS);
  return `b-${mailId}-${mac}@${domain.trim().toLowerCase().replace(/\.$/, '')}`;
}

/** A fresh secret for the `return-path` row of server_secrets. */
export function newReturnPathSecret(): string {
  return crypto.randomBytes(32).toString('base64url');
}
