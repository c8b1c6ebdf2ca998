/**
 * The SQL of idempotency keys (docs/api.md): a key is unique per API key (the unique index
 * `mails_idempotency_idx` on (api_key_id, idempotency_key)), so two submissions racing with the same key
 * cannot both insert; the loser recognises the unique violation by its engine's error code and answers
 * with the winner's mail.
 */
import type { DbOrTrx, Engine } from '../store/connection.js';

/** The stored mail id of each key already used by this API key. */
export async function findMailIdsByIdempotencyKey(db: DbOrTrx, apiKeyId: number, keys: readonly string[]): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  if (keys.length === 0) return found;
  const rows = await db
    .selectFrom('mails')
    .select(['id', 'idempotency_key'])
    .where('api_key_id', '=', apiKeyId)
    .where('idempotency_key', 'in', [...keys])
    .execute();
  for (const row of rows) if (row.idempotency_key !== null) found.set(row.idempotency_key, row.id);
  return found;
}

/**
 * Whether an INSERT failed on a unique index: SQLite (better-sqlite3) says SQLITE_CONSTRAINT_UNIQUE,
 * PostgreSQL SQLSTATE 23505 (unique_violation) and names the index it hit.
 */
export function isIdempotencyKeyConflict(error: unknown, engine: Engine): boolean {
  if (!(error instanceof Error)) return false;
  const { code, constraint } = error as Error & { code?: unknown; constraint?: unknown };
  if (engine === 'sqlite') return code === 'SQLITE_CONSTRAINT_UNIQUE';
  return code === '23505' && (constraint === undefined || constraint === 'mails_idempotency_idx');
}
