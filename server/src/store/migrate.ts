/**
 * One migration history for both engines (PRODUCT.md §4). Kysely's Migrator runs them in a transaction and,
 * on PostgreSQL, under an advisory lock, so several instances may start at the same moment.
 */
import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Store } from './connection.js';
import { initialSchema } from './migrations/001-initial-schema.js';
import { statusSortIndex } from './migrations/002-status-sort-index.js';
import { recipientOutcomes } from './migrations/004-recipient-outcomes.js';

export function migrations(store: Pick<Store, 'engine'>): Record<string, Migration> {
  return {
    '001-initial-schema': initialSchema(store.engine),
    '002-status-sort-index': statusSortIndex(),
    // 003 is another branch's (search index); Kysely orders by name, so 004 runs after it once merged.
    '004-recipient-outcomes': recipientOutcomes(),
  };
}

export async function migrateToLatest(store: Store): Promise<void> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(store) };
  const migrator = new Migrator({ db: store.db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    const cause = error instanceof Error ? error.message : String(error);
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${cause}`, { cause: error });
  }
}
