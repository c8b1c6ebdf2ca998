/**
 * Random bytes drawn 4 KiB at a time from the CSPRNG: one call per few hundred ids instead of one per id
 * (`randomBytes(16)` is a system call each time; a group commit makes dozens of ids at once).
 */
import { randomBytes } from 'node:crypto';

let pool = Buffer.alloc(0);
let offset = 0;

/**
 * `length` fresh random bytes, a view into the pool that nobody else is handed: the caller may write into it
 * (a time prefix, a version's bits). A new pool replaces a spent one, so a view stays as it was handed.
 */
export function pooledRandomBytes(length: number): Buffer {
  if (offset + length > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  offset += length;
  return pool.subarray(offset - length, offset);
}
