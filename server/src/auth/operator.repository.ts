/** All SQL about operators, sessions (tokens) and API keys. Functions take `db | trx` first. */
import type { DbOrTrx } from '../store/connection.js';
import type { ApiKeyRow, OperatorRow } from '../store/schema.js';

export function findOperatorByUsername(db: DbOrTrx, username: string): Promise<OperatorRow | undefined> {
  return db.selectFrom('operators').selectAll().where('username', '=', username).executeTakeFirst();
}

export async function countOperators(db: DbOrTrx): Promise<number> {
  const row = await db
    .selectFrom('operators')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertOperator(db: DbOrTrx, username: string, passwordHash: string, now: number): Promise<number> {
  const row = await db
    .insertInto('operators')
    .values({ username, password_hash: passwordHash, created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Swaps a hash for a stronger one of the same password, unless the password was changed meanwhile. */
export async function replaceOperatorPasswordHash(db: DbOrTrx, operatorId: number, oldHash: string, newHash: string): Promise<boolean> {
  const result = await db
    .updateTable('operators')
    .set({ password_hash: newHash })
    .where('id', '=', operatorId)
    .where('password_hash', '=', oldHash)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function updateOperatorPassword(db: DbOrTrx, username: string, passwordHash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('operators')
    .set({ password_hash: passwordHash, updated_at: now })
    .where('username', '=', username)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteOperator(db: DbOrTrx, username: string): Promise<boolean> {
  const result = await db.deleteFrom('operators').where('username', '=', username).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function insertSession(
  db: DbOrTrx,
  session: { tokenHash: string; operatorId: number; now: number; expiresAt: number },
): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      token_hash: session.tokenHash,
      operator_id: session.operatorId,
      created_at: session.now,
      expires_at: session.expiresAt,
      revoked_at: null,
    })
    .execute();
}

/** The operator behind a token that is neither expired nor revoked. */
export function findActiveSession(db: DbOrTrx, tokenHash: string, now: number) {
  return db
    .selectFrom('sessions')
    .innerJoin('operators', 'operators.id', 'sessions.operator_id')
    .select(['sessions.token_hash', 'sessions.expires_at', 'operators.id as operator_id', 'operators.username'])
    .where('sessions.token_hash', '=', tokenHash)
    .where('sessions.expires_at', '>', now)
    .where('sessions.revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function revokeSession(db: DbOrTrx, tokenHash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Changing or removing an operator's password ends every session it holds. */
export async function revokeOperatorSessions(db: DbOrTrx, operatorId: number, now: number): Promise<void> {
  await db.updateTable('sessions').set({ revoked_at: now }).where('operator_id', '=', operatorId).where('revoked_at', 'is', null).execute();
}

export async function deleteExpiredSessions(db: DbOrTrx, now: number): Promise<number> {
  const result = await db.deleteFrom('sessions').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function insertApiKey(db: DbOrTrx, name: string, keyHash: string, now: number, lane = 0): Promise<number> {
  const row = await db
    .insertInto('api_keys')
    .values({ name, key_hash: keyHash, created_at: now, revoked_at: null, lane })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export function findApiKeyByName(db: DbOrTrx, name: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function setApiKeyLane(db: DbOrTrx, id: number, lane: number): Promise<void> {
  await db.updateTable('api_keys').set({ lane }).where('id', '=', id).execute();
}

export function findActiveApiKey(db: DbOrTrx, keyHash: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).where('revoked_at', 'is', null).executeTakeFirst();
}

export async function revokeApiKey(db: DbOrTrx, name: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('name', '=', name)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export function listApiKeys(db: DbOrTrx): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().orderBy('name').execute();
}
