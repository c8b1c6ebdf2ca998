/**
 * Operator passwords are hashed with argon2id (the `argon2` package: the reference C implementation, shipped
 * prebuilt for the common platforms, run on libuv's threads). Hashes are PHC strings that carry their own
 * parameters: `$argon2id$v=19$m=19456,t=2,p=1$salt$hash`. A hash verifies with the parameters it carries,
 * and one made with less memory or fewer passes than today's, or with scrypt (`scrypt$N$r$p$salt$hash`, the
 * scheme before argon2id), is re-hashed at the next successful login (auth.service.ts).
 *
 * Why argon2id over scrypt: OWASP's first choice, and at its parameters (19 MiB, 2 passes) a login costs
 * ~30 ms of one core where scrypt at OWASP's N = 2^17 cost ~420 ms (docs/decisions.md).
 */
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import argon2 from 'argon2';

/**
 * argon2id's memory for new hashes, in KiB: 19 MiB, OWASP's minimum with 2 passes and 1 lane. PASSWORD_HASH_MEMORY
 * sets more (in MiB) for a server and its CLI; tests choose less through buildApp's `passwordCost`.
 */
export const DEFAULT_PASSWORD_COST = 19 * 1024;
/** Passes over the memory (OWASP: 2 at 19 MiB). A stored hash with fewer is re-hashed. */
const PASSES = 2;
const LANES = 1;
const HASH_BYTES = 32;
/** Bounds on what a stored hash may ask for before it is verified: past them it is not ours. */
const MAX_MEMORY_KIB = 1024 * 1024;
const MAX_PASSES = 64;

export async function hashPassword(password: string, memoryKiB = DEFAULT_PASSWORD_COST): Promise<string> {
  return argon2.hash(password, {
    type: argon2.argon2id,
    memoryCost: memoryKiB,
    timeCost: PASSES,
    parallelism: LANES,
    hashLength: HASH_BYTES,
  });
}

interface Argon2Parameters {
  scheme: 'argon2id';
  memoryKiB: number;
  passes: number;
}

/** The parameters of an argon2id PHC string, or undefined when it is not one we would verify. */
function parseArgon2(stored: string): Argon2Parameters | undefined {
  const [empty, scheme, version, parameters, salt, hash] = stored.split('$');
  if (empty !== '' || scheme !== 'argon2id' || version !== 'v=19' || !parameters || !salt || !hash) return undefined;
  const values = new Map(parameters.split(',').map((pair) => pair.split('=') as [string, string]));
  const memoryKiB = Number(values.get('m'));
  const passes = Number(values.get('t'));
  const lanes = Number(values.get('p'));
  if (![memoryKiB, passes, lanes].every(Number.isInteger)) return undefined;
  if (memoryKiB < 8 || memoryKiB > MAX_MEMORY_KIB || passes < 1 || passes > MAX_PASSES || lanes !== LANES) return undefined;
  return { scheme: 'argon2id', memoryKiB, passes };
}

/** The scheme before argon2id: `scrypt$N$r$p$salt$hash`, r = 8, p = 1. Such hashes still verify, once. */
const scrypt = promisify(crypto.scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: crypto.ScryptOptions,
) => Promise<Buffer>;
const SCRYPT_MAX_N = 2 ** 20;

interface ScryptHash {
  scheme: 'scrypt';
  n: number;
  salt: Buffer;
  hash: Buffer;
}

function parseScrypt(stored: string): ScryptHash | undefined {
  const [scheme, n, r, p, saltText, hashText] = stored.split('$');
  if (scheme !== 'scrypt' || !n || r !== '8' || p !== '1' || !saltText || !hashText) return undefined;
  const parsed = {
    scheme: 'scrypt' as const,
    n: Number(n),
    salt: Buffer.from(saltText, 'base64url'),
    hash: Buffer.from(hashText, 'base64url'),
  };
  if (!Number.isInteger(parsed.n) || parsed.n < 2 || parsed.n > SCRYPT_MAX_N || parsed.hash.length === 0) return undefined;
  return parsed;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (parseArgon2(stored)) {
    try {
      return await argon2.verify(stored, password);
    } catch {
      return false;
    }
  }
  const legacy = parseScrypt(stored);
  if (!legacy) return false;
  // scrypt needs 128·N·r bytes; Node refuses more than `maxmem`.
  const actual = await scrypt(password, legacy.salt, legacy.hash.length, { N: legacy.n, r: 8, p: 1, maxmem: 1024 * legacy.n + 2 ** 20 });
  return crypto.timingSafeEqual(actual, legacy.hash);
}

/** Whether a stored hash is scrypt, or argon2id with less memory or fewer passes than asked (then it is re-hashed at the next login). */
export function needsRehash(stored: string, memoryKiB = DEFAULT_PASSWORD_COST): boolean {
  const parsed = parseArgon2(stored);
  return parsed === undefined || parsed.memoryKiB < memoryKiB || parsed.passes < PASSES;
}

/** What a stored hash was made with, or undefined for a hash that is not ours (for tests and diagnostics). */
export function describeHash(stored: string): Argon2Parameters | { scheme: 'scrypt'; n: number } | undefined {
  const legacy = parseScrypt(stored);
  return parseArgon2(stored) ?? (legacy && { scheme: 'scrypt', n: legacy.n });
}

/**
 * A hash to verify against when the username is unknown, so that an unknown user costs the same hashing
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
 * At most `limit` password hashes at once. Each hash runs on one of libuv's four threads,
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
