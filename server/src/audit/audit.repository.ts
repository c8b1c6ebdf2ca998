/** The audit log: who did what, when, with the state before and after (ARCHITECTURE.md#security). */
import type { DbOrTrx } from '../store/connection.js';
import { escapeLike } from '../store/like.js';
import type { AuditLogTable } from '../store/schema.js';
import { sql, type Selectable } from 'kysely';

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

export type AuditRow = Selectable<AuditLogTable>;

export interface AuditFilter {
  /** Exact actor, e.g. `operator:ops`. */
  actor?: string | undefined;
  /** Exact action, or the prefix of a dotted one. */
  action?: string | undefined;
  from?: number | undefined;
  to?: number | undefined;
  /** The last entry of the previous page: (at, id), newest first. */
  after?: { at: number; id: number } | undefined;
}

/**
 * One page, newest first, keyset on (at, id): the `at` index serves the order and the time range (SQLite
 * keeps the rowid in every index entry; PostgreSQL adds the id order within equal `at`).
 */
export function listAuditPage(db: DbOrTrx, filter: AuditFilter, limit: number): Promise<AuditRow[]> {
  let q = db.selectFrom('audit_log').selectAll();
  if (filter.actor !== undefined) q = q.where('actor', '=', filter.actor);
  if (filter.action !== undefined) {
    const action = filter.action;
    q = q.where((eb) => eb.or([eb('action', '=', action), eb('action', 'like', sql<string>`${`${escapeLike(action)}.%`} escape '\\'`)]));
  }
  if (filter.from !== undefined) q = q.where('at', '>=', filter.from);
  if (filter.to !== undefined) q = q.where('at', '<', filter.to);
  if (filter.after) {
    const { at, id } = filter.after;
    q = q.where((eb) => eb.or([eb('at', '<', at), eb.and([eb('at', '=', at), eb('id', '<', id)])]));
  }
  return q.orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** Deletes up to `limit` entries older than `before` (ms), oldest first; answers how many went. */
export async function deleteAuditEntriesBefore(db: DbOrTrx, before: number, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('audit_log')
    .where('id', 'in', db.selectFrom('audit_log').select('id').where('at', '<', before).orderBy('at').limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
