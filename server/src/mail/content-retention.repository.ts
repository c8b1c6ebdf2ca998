/**
 * Content retention's SQL (docs/operations.md#content-retention) other than its write (write/content.ts): the
 * applications' own retention (`api_keys.content_retention_days`, migration 025) and the purge's read of the mails
 * whose content is due. Functions take `db | trx` first.
 */
import { sql } from 'kysely';
import { CONTENT_RETENTION_STATUSES } from '@outbox/contract';
import type { DbOrTrx } from '../store/connection.js';
import { engineOf } from '../store/statement-batch.js';

export interface ApplicationContentRetentionRow {
  id: number;
  name: string;
  content_retention_days: number | null;
}

/** Every API key (revoked ones too: their mails are still kept) with its own retention, or null. */
export async function listApplicationContentRetention(db: DbOrTrx): Promise<ApplicationContentRetentionRow[]> {
  const rows = await db.selectFrom('api_keys').select(['id', 'name', 'content_retention_days']).orderBy('id').execute();
  return rows.map((row) => ({ ...row, id: Number(row.id) }));
}

export async function findApplicationContentRetention(
  db: DbOrTrx,
  key: { id: number } | { name: string },
): Promise<ApplicationContentRetentionRow | undefined> {
  let query = db.selectFrom('api_keys').select(['id', 'name', 'content_retention_days']);
  query = 'id' in key ? query.where('id', '=', key.id) : query.where('name', '=', key.name);
  const row = await query.executeTakeFirst();
  return row && { ...row, id: Number(row.id) };
}

/** Sets (a number) or clears (null) an API key's own retention; undefined when no key is named so. */
export async function updateApplicationContentRetention(
  db: DbOrTrx,
  key: { id: number } | { name: string },
  days: number | null,
): Promise<ApplicationContentRetentionRow | undefined> {
  let query = db.updateTable('api_keys').set({ content_retention_days: days });
  query = 'id' in key ? query.where('id', '=', key.id) : query.where('name', '=', key.name);
  const row = await query.returning(['id', 'name', 'content_retention_days']).executeTakeFirst();
  return row && { ...row, id: Number(row.id) };
}

/**
 * Up to `limit` mails of these applications (`null`: the mails of no application, such as demo data) whose content
 * is due: final, content kept, unchanged since before `before`. One range of migration 025's partial index per
 * application; a mail leaves that index when its content goes, so nothing is read twice. On SQLite the index is
 * named (`INDEXED BY`): a partial index is matched by its predicate's text, and a planner that chose another one
 * would walk every final mail.
 */
export async function listContentDue(db: DbOrTrx, apiKeyIds: readonly number[] | null, before: number, limit: number): Promise<number[]> {
  if (apiKeyIds?.length === 0) return [];
  const table = engineOf(db) === 'postgres' ? sql`mails` : sql`mails indexed by mails_content_pending_idx`;
  const statuses = sql.join(CONTENT_RETENTION_STATUSES.map((status) => sql.lit(status)));
  const owner = apiKeyIds === null ? sql`api_key_id is null` : sql`api_key_id in (${sql.join(apiKeyIds)})`;
  const { rows } = await sql<{ id: number }>`
    select id from ${table}
    where content_removed_at is null and status in (${statuses}) and ${owner} and last_update_at < ${before}
    limit ${limit}`.execute(db);
  return rows.map((row) => Number(row.id));
}

/** Which of `ids` have had their content removed, with when: a bulk requeue's skip reason. */
export async function findContentRemoved(db: DbOrTrx, ids: readonly number[]): Promise<Map<number, number>> {
  const removed = new Map<number, number>();
  for (let start = 0; start < ids.length; start += 900) {
    const rows = await db
      .selectFrom('mails')
      .select(['id', 'content_removed_at'])
      .where('id', 'in', ids.slice(start, start + 900))
      .where('content_removed_at', 'is not', null)
      .execute();
    for (const row of rows) removed.set(Number(row.id), Number(row.content_removed_at));
  }
  return removed;
}
