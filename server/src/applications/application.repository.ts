/**
 * All SQL about applications (API keys, `api_keys`; migrations 001 and 023). Functions take `db | trx` first.
 * The key lookup of every authenticated submission is `findApiKeyByHash`: one seek on a unique index, and a
 * second one only for a key that is not the current one of any application (an old key in its grace period, or
 * a wrong key).
 */
import type { DbOrTrx } from '../store/connection.js';
import type { ApiKeyRow } from '../store/schema.js';

export function listApplicationRows(db: DbOrTrx): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().orderBy('name').execute();
}

export function findApplicationRow(db: DbOrTrx, id: number): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findApplicationRowByName(db: DbOrTrx, name: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function insertApplication(
  db: DbOrTrx,
  application: { name: string; keyHash: string; createdAt: number; createdBy: string; lane: number },
): Promise<ApiKeyRow> {
  return db
    .insertInto('api_keys')
    .values({
      name: application.name,
      key_hash: application.keyHash,
      created_at: application.createdAt,
      created_by: application.createdBy,
      revoked_at: null,
      lane: application.lane,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function setApplicationLane(db: DbOrTrx, id: number, lane: number): Promise<void> {
  await db.updateTable('api_keys').set({ lane }).where('id', '=', id).execute();
}

/** Answers the renamed row, or undefined when no application has that id. */
export function renameApplication(db: DbOrTrx, id: number, name: string): Promise<ApiKeyRow | undefined> {
  return db.updateTable('api_keys').set({ name }).where('id', '=', id).returningAll().executeTakeFirst();
}

/**
 * Revokes an active application, its rotation's old key with it; undefined when there is none with that id or it
 * is revoked already (the caller tells which).
 */
export function revokeApplication(db: DbOrTrx, id: number, now: number): Promise<ApiKeyRow | undefined> {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: now, previous_key_hash: null, previous_key_expires_at: null })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/**
 * A new key for an active application; the one it replaces keeps working until `previousKeyExpiresAt` (null
 * with no grace: it stops at once). A rotation made during another one's grace ends the older key now: an
 * application has at most two keys. Conditional on the key being the one read, so two rotations at once do not
 * both win.
 */
export function rotateApplicationKey(
  db: DbOrTrx,
  id: number,
  keys: { currentKeyHash: string; newKeyHash: string; previousKeyExpiresAt: number | null },
): Promise<ApiKeyRow | undefined> {
  const keepsOldKey = keys.previousKeyExpiresAt !== null;
  return db
    .updateTable('api_keys')
    .set({
      key_hash: keys.newKeyHash,
      previous_key_hash: keepsOldKey ? keys.currentKeyHash : null,
      previous_key_expires_at: keys.previousKeyExpiresAt,
    })
    .where('id', '=', id)
    .where('key_hash', '=', keys.currentKeyHash)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** The active application this key hash belongs to: its current key, or its previous one before the grace ends. */
export async function findApiKeyByHash(
  db: DbOrTrx,
  keyHash: string,
  now: number,
): Promise<Pick<ApiKeyRow, 'id' | 'name' | 'last_used_at' | 'lane'> | undefined> {
  const current = await db
    .selectFrom('api_keys')
    .select(['id', 'name', 'last_used_at', 'lane'])
    .where('key_hash', '=', keyHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (current) return current;
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'last_used_at', 'lane'])
    .where('previous_key_hash', '=', keyHash)
    .where('previous_key_expires_at', '>', now)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

/**
 * Records a use, unless one at most `minIntervalMs` ago was recorded already (by this instance or another):
 * a busy key costs one write a minute, not one per submission.
 */
export async function recordApplicationUse(db: DbOrTrx, id: number, now: number, minIntervalMs: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', now - minIntervalMs)]))
    .execute();
}

/**
 * The application's mails received after `since`, counted up to `cap + 1` on `mails_api_key_received_idx`
 * (migration 023) alone: a busy application costs at most `cap + 1` index entries, never a walk of its mails.
 */
export async function countMailsSince(db: DbOrTrx, apiKeyId: number, since: number, cap: number): Promise<number> {
  const row = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('mails')
        .select('api_key_id')
        .where('api_key_id', '=', apiKeyId)
        .where('received_at', '>', since)
        // In the index's order: a plain index scan that stops at the limit, never a bitmap of every match.
        .orderBy('received_at', 'desc')
        .limit(cap + 1)
        .as('recent'),
    )
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
