/** All SQL about operators and sessions (tokens); API keys are in applications/application.repository.ts. Functions take `db | trx` first. */
import type { DbOrTrx } from '../store/connection.js';
import type { OperatorRow } from '../store/schema.js';

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
