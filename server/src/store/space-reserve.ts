/**
 * Room kept in the embedded store for what must still be written when the disk fills. Without it, the mails
 * that filled the disk are followed by a worker that sends mail and cannot record that it did: each outcome
 * fails with SQLITE_FULL, the lease runs out, and the same mails are sent again and again. So intake stops
 * while less than INTAKE_RESERVE_BYTES are left (507 over HTTP, 452 over SMTP), and the reserve takes the
 * delivery outcomes, the operators' actions and their logins until space returns. A mail is about 100 bytes
 * of outcome, so 32 MiB records a few hundred thousand outcomes.
 *
 * The room is the smaller of what the filesystem has (statfs) and what SQLite may still add
 * (`max_page_count`), plus the file's own free pages. On PostgreSQL there is nothing to check here: the
 * database server manages its disk (and answers 53100 disk_full when it cannot).
 */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { Store } from './connection.js';

export const INTAKE_RESERVE_BYTES = 32 * 1024 * 1024;
/** How long a measurement stands; intake asks on every submission, so this bounds the cost of asking. */
const MEASURE_EVERY_MS = 200;

export interface SpaceReserve {
  /** False while the store has less room left than the reserve; intake should refuse then. */
  hasRoomForIntake(): Promise<boolean>;
}

export function createSpaceReserve(store: Store, reserveBytes = INTAKE_RESERVE_BYTES): SpaceReserve {
  const file = store.file;
  if (store.engine !== 'sqlite' || file === undefined) return { hasRoomForIntake: async () => true };
  const folder = path.dirname(file);

  const pragma = async (name: string) => {
    const { rows } = await sql<Record<string, number>>`pragma ${sql.raw(name)}`.execute(store.db);
    return Number(rows[0]?.[name] ?? 0);
  };
  async function measure(): Promise<boolean> {
    const pageSize = await pragma('page_size');
    const pages = await pragma('page_count');
    const freePages = await pragma('freelist_count');
    const maxPages = await pragma('max_page_count');
    const disk = await fs.promises.statfs(folder);
    const growth = Math.min((maxPages - pages) * pageSize, disk.bavail * disk.bsize);
    return growth + freePages * pageSize >= reserveBytes;
  }

  let measuredAt = Number.NEGATIVE_INFINITY;
  let hasRoom = true;
  let measuring: Promise<boolean> | undefined;
  return {
    hasRoomForIntake() {
      if (performance.now() - measuredAt < MEASURE_EVERY_MS) return Promise.resolve(hasRoom);
      // A measurement that fails (it should not) does not stop intake; a real full store still answers 507.
      measuring ??= measure()
        .catch(() => true)
        .then((result) => {
          hasRoom = result;
          measuredAt = performance.now();
          return result;
        })
        .finally(() => (measuring = undefined));
      return measuring;
    },
  };
}
