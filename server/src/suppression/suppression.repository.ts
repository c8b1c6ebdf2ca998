/**
 * The suppression list (migration 011): addresses Outbox does not send to. Added by hard bounces, complaints and
 * relay refusals saying the address does not exist, and by operators; read at submission.
 */
import { sql, type Insertable } from 'kysely';
import type { DbOrTrx } from '../store/connection.js';
import type { SuppressionRow, SuppressionTable } from '../store/schema.js';

export type SuppressionReason = 'hard_bounce' | 'rcpt_refused' | 'complaint' | 'manual';

export interface NewSuppression {
  address: string;
  reason: SuppressionReason;
  mailId?: number | null;
  detail?: string | null;
  note?: string | null;
  createdBy: string;
  at: number;
  expiresAt?: number | null;
}

/**
 * Adds the addresses, or refreshes an existing entry (new reason, mail, time; an expiry is cleared unless given):
 * the newest cause is the one an operator needs to read. Returns nothing: callers read the list when they need it.
 */
export async function upsertSuppressions(db: DbOrTrx, entries: readonly NewSuppression[]): Promise<void> {
  // One statement per 500 addresses (a bounce group or an import is one, not one per address). An address named
  // twice keeps its last entry, as applying them in order would; PostgreSQL also refuses to update a row twice
  // in one INSERT … ON CONFLICT.
  const rows = new Map<string, SuppressionInsert>();
  for (const entry of entries) {
    const address = entry.address.trim().toLowerCase();
    rows.delete(address);
    rows.set(address, {
      address,
      reason: entry.reason,
      mail_id: entry.mailId ?? null,
      detail: entry.detail ?? null,
      note: entry.note ?? null,
      created_by: entry.createdBy,
      created_at: entry.at,
      expires_at: entry.expiresAt ?? null,
    });
  }
  const all = [...rows.values()];
  for (let start = 0; start < all.length; start += 500) {
    await db
      .insertInto('suppressions')
      .values(all.slice(start, start + 500))
      .onConflict((oc) =>
        oc.column('address').doUpdateSet((eb) => ({
          reason: eb.ref('excluded.reason'),
          mail_id: eb.ref('excluded.mail_id'),
          detail: eb.ref('excluded.detail'),
          note: eb.ref('excluded.note'),
          created_by: eb.ref('excluded.created_by'),
          created_at: eb.ref('excluded.created_at'),
          expires_at: eb.ref('excluded.expires_at'),
        })),
      )
      .execute();
  }
}

type SuppressionInsert = Insertable<SuppressionTable>;

/** Which of these addresses are suppressed at `now` (expired entries do not count); lower-cased. */
export async function suppressedAmong(db: DbOrTrx, addresses: readonly string[], now: number): Promise<Map<string, SuppressionRow>> {
  const wanted = [...new Set(addresses.map((a) => a.trim().toLowerCase()))];
  const found = new Map<string, SuppressionRow>();
  for (let start = 0; start < wanted.length; start += 500) {
    const rows = await db
      .selectFrom('suppressions')
      .selectAll()
      .where('address', 'in', wanted.slice(start, start + 500))
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .execute();
    for (const row of rows) found.set(row.address, row);
  }
  return found;
}

export interface SuppressionFilter {
  /** Lower-cased address substring. */
  q?: string | undefined;
  /** Keyset: entries older than this one (newest first). */
  after?: { at: number; id: number } | undefined;
}

/** One page, newest first (created_at, id descending: suppressions_created_idx). */
export function listSuppressionsPage(db: DbOrTrx, filter: SuppressionFilter, limit: number): Promise<SuppressionRow[]> {
  let query = db.selectFrom('suppressions').selectAll();
  if (filter.q) {
    const pattern = `%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query = query.where(sql<boolean>`address like ${pattern} escape '\\'`);
  }
  const after = filter.after;
  if (after)
    query = query.where((eb) =>
      eb.or([eb('created_at', '<', after.at), eb.and([eb('created_at', '=', after.at), eb('id', '<', after.id)])]),
    );
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** Removes the address; false when it was not listed. */
export async function deleteSuppression(db: DbOrTrx, address: string): Promise<boolean> {
  const result = await db.deleteFrom('suppressions').where('address', '=', address.trim().toLowerCase()).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Which of these (lower-cased) addresses have a row, expired or not: an import counts them as updated. */
export async function listedAmong(db: DbOrTrx, addresses: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (let start = 0; start < addresses.length; start += 500) {
    const rows = await db
      .selectFrom('suppressions')
      .select('address')
      .where('address', 'in', addresses.slice(start, start + 500))
      .execute();
    for (const row of rows) found.add(row.address);
  }
  return found;
}

/** Whether the list has any row: when not, submissions skip their check (suppression-check.ts). */
export async function hasAnySuppression(db: DbOrTrx): Promise<boolean> {
  const row = await db.selectFrom('suppressions').select('id').limit(1).executeTakeFirst();
  return row !== undefined;
}
