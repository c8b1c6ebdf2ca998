/** The audit log: who did what, when, with the state before and after (PRODUCT.md §5). */
import type { DbOrTrx } from '../store/connection.js';

export interface AuditEntry {
  at: number;
  actor: string;
  action: string;
  target?: string | null;
  before?: unknown;
  after?: unknown;
}

export async function insertAuditEntries(db: DbOrTrx, entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db
    .insertInto('audit_log')
    .values(
      entries.map((e) => ({
        at: e.at,
        actor: e.actor,
        action: e.action,
        target: e.target ?? null,
        before_json: e.before === undefined ? null : JSON.stringify(e.before),
        after_json: e.after === undefined ? null : JSON.stringify(e.after),
      })),
    )
    .execute();
}

export function listAuditEntries(db: DbOrTrx, limit = 100) {
  return db.selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(limit).execute();
}
