/**
 * The audit log's retention (AUDIT_RETENTION_DAYS, docs/operations.md#configuration): entries older than that go,
 * with the retention purge of finished mails (main.ts). Without it every failed login of a flood stayed for
 * ever.
 */
import type { Clock } from '../clock.js';
import type { Store } from '../store/connection.js';
import { deleteAuditEntriesBefore } from './audit.repository.js';

/** Deleted per statement, so a first purge of years of entries never holds the store for long. */
const PURGE_CHUNK = 5_000;

export function createAuditRetention({ store, clock }: { store: Store; clock: Clock }) {
  /** Deletes the entries older than `days`; answers how many went. */
  async function purgeAuditLog(days: number): Promise<number> {
    const before = clock.now() - days * 86_400_000;
    let purged = 0;
    for (;;) {
      const deleted = await deleteAuditEntriesBefore(store.db, before, PURGE_CHUNK);
      purged += deleted;
      if (deleted < PURGE_CHUNK) return purged;
    }
  }
  return { purgeAuditLog };
}
