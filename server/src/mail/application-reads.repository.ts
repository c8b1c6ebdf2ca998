/**
 * The small reads behind an application's own mails and the exact `messageId=` /
 * `idempotencyKey=` lookups: newest first, keyset on id, each served by one index of migration 010
 * ((api_key_id, id), (message_id), (idempotency_key)). Kept apart from the operators' list planner
 * (mail.repository.ts), which these filters never reach.
 */
import type { DbOrTrx } from '../store/connection.js';
import { statusTerm, withLeases, type MailView } from './leases.js';

export interface ApplicationMailFilter {
  /** Only this key's mails; null: any (an operator's exact lookup). */
  apiKeyId: number | null;
  messageId?: string | undefined;
  idempotencyKey?: string | undefined;
  statuses?: readonly number[] | undefined;
}

function filtered(db: DbOrTrx, filter: ApplicationMailFilter) {
  let query = db.selectFrom('mails');
  if (filter.apiKeyId !== null) query = query.where('api_key_id', '=', filter.apiKeyId);
  if (filter.messageId !== undefined) query = query.where('message_id', '=', filter.messageId);
  if (filter.idempotencyKey !== undefined) query = query.where('idempotency_key', '=', filter.idempotencyKey);
  if (filter.statuses && filter.statuses.length > 0) query = query.where(statusTerm(filter.statuses));
  return query;
}

/** Up to `limit` matching mails with an id below `beforeId`, newest (highest id) first. */
export async function listApplicationMailRows(
  db: DbOrTrx,
  filter: ApplicationMailFilter,
  beforeId: number | undefined,
  limit: number,
): Promise<MailView[]> {
  let query = filtered(db, filter).selectAll();
  if (beforeId !== undefined) query = query.where('id', '<', beforeId);
  return withLeases(db, await query.orderBy('id', 'desc').limit(limit).execute());
}

/** Matching mails, counted up to `cap` + 1 (so a caller can tell "more than cap" without counting them all). */
export async function countApplicationMailsUpTo(db: DbOrTrx, filter: ApplicationMailFilter, cap: number): Promise<number> {
  const row = await db
    .selectFrom(
      filtered(db, filter)
        .select('id')
        .limit(cap + 1)
        .as('matches'),
    )
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Whose mail it is: the submitting key's id (null: no application's), or undefined when there is no such mail. */
export async function findMailApiKeyId(db: DbOrTrx, id: number): Promise<{ apiKeyId: number | null } | undefined> {
  const row = await db.selectFrom('mails').select('api_key_id').where('id', '=', id).executeTakeFirst();
  return row ? { apiKeyId: row.api_key_id === null ? null : Number(row.api_key_id) } : undefined;
}
