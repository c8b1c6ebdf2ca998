/**
 * Operator passwords are hashed with scrypt (memory-hard, in Node's crypto: no native dependency).
 * Format: `scrypt$N$r$p$salt$hash`, base64url, so the parameters can be raised later without a migration:
 * a hash verifies with the parameters it carries, and one below the current cost is re-hashed at the next
 * successful login (auth.service.ts).
 */
import crypto from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(crypto.scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: crypto.ScryptOptions,
) => Promise<Buffer>;

/**
 * scrypt's N for new hashes: 2^17 (128 MiB and a few hundred ms per hash), OWASP's recommendation for scrypt.
 * Up to 2^14 before issue 24. PASSWORD_HASH_COST sets another power of two (14–20) for a server and its CLI;
 * tests choose a lower cost through buildApp's `passwordCost`.
 */
export const DEFAULT_PASSWORD_COST = 2 ** 17;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
/** scrypt needs 128·N·r bytes; Node refuses more than `maxmem`. Stored hashes above 2^20 are not ours. */
const MAX_COST = 2 ** 20;
const memoryFor = (n: number, r: number) => 128 * n * r + 1024 * 1024;

export async function hashPassword(password: string, cost = DEFAULT_PASSWORD_COST): Promise<string> {
  const salt = crypto.randomBytes(16);
  const hash = await scrypt(password, salt, KEY_LENGTH, { N: cost, r: R, p: P, maxmem: memoryFor(cost, R) });
  return ['scrypt', cost, R, P, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

interface StoredHash {
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function parseHash(stored: string): StoredHash | undefined {
  const [scheme, n, r, p, saltText, hashText] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !saltText || !hashText) return undefined;
  const parsed = {
    n: Number(n),
    r: Number(r),
    p: Number(p),
    salt: Buffer.from(saltText, 'base64url'),
    hash: Buffer.from(hashText, 'base64url'),
  };
  if (!Number.isInteger(parsed.n) || parsed.n < 2 || parsed.n > MAX_COST || parsed.r !== R || parsed.p !== P) return undefined;
  return parsed;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (!parsed) return false;
  const actual = await scrypt(password, parsed.salt, parsed.hash.length, {
    N: parsed.n,
    r: parsed.r,
    p: parsed.p,
    maxmem: memoryFor(parsed.n, parsed.r),
  });
  return crypto.timingSafeEqual(actual, parsed.hash);
}

/** Whether a stored hash was made with less work than `cost` asks for (then it is re-hashed at the next login). */
export function needsRehash(stored: string, cost = DEFAULT_PASSWORD_COST): boolean {
  const parsed = parseHash(stored);
  return parsed === undefined || parsed.n < cost;
}

/** The N a stored hash was made with, or undefined for a hash that is not ours. */
export function costOf(stored: string): number | undefined {
  return parseHash(stored)?.n;
}

/**
 * A hash to verify against when the username is unknown, so that an unknown user costs the same scrypt
 * work as a wrong password and the timing tells nothing (docs/api.md#routes: no user enumeration). One per cost.
 */
const dummyHashes = new Map<number, Promise<string>>();
export function getDummyHash(cost = DEFAULT_PASSWORD_COST): Promise<string> {
  let dummy = dummyHashes.get(cost);
  if (!dummy) {
    dummy = hashPassword(crypto.randomBytes(16).toString('hex'), cost);
    dummyHashes.set(cost, dummy);
  }
  return dummy;
}

/**
 * At most `limit` password hashes at once (issue 24, item 4). Each scrypt runs on one of libuv's four threads,
 * which file reads, DNS lookups and compression share: a login flood must leave them room.
 */
export function createHashingLimit(limit: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async function withHashingSlot<T>(work: () => Promise<T>): Promise<T> {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter, so a late arrival cannot overtake the queue.
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** 256-bit random secret for tokens and API keys, and the hash we keep of it (never the secret itself). */
export function createSecret(prefix = ''): { secret: string; hash: string } {
  const secret = prefix + crypto.randomBytes(32).toString('base64url');
  return { secret, hash: hashSecret(secret) };
}

export function hashSecret(secret: string): string {
  return crypto.createHash('sha256').update(secret).digest('hex');
}

export function randomPassword(): string {
  return crypto.randomBytes(12).toString('base64url');
}
