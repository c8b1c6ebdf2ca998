import { sql, type Kysely } from 'kysely';

/**
 * PostgreSQL: `CREATE EXTENSION IF NOT EXISTS name` for a trusted extension that ships with PostgreSQL
 * (`pg_trgm`, `btree_gin`), or an error that says what it is for and how the database's owner creates it.
 * A savepoint keeps a failed CREATE EXTENSION from aborting the migration's transaction before we can say why.
 */
export async function createTrustedExtension(db: Kysely<unknown>, name: 'pg_trgm' | 'btree_gin', purpose: string): Promise<void> {
  const savepoint = sql.raw(`create_${name}`);
  try {
    await sql`savepoint ${savepoint}`.execute(db);
    await sql`create extension if not exists ${sql.raw(name)}`.execute(db);
    await sql`release savepoint ${savepoint}`.execute(db);
  } catch (error) {
    const cause = error instanceof Error ? error.message : String(error);
    throw new Error(
      `the PostgreSQL extension ${name} (${purpose}) could not be created: ${cause}. ` +
        'It ships with PostgreSQL (package postgresql-contrib on some systems) and is a trusted extension since ' +
        `PostgreSQL 13, so the database owner can create it: run \`CREATE EXTENSION ${name};\` in this database ` +
        'as its owner or a superuser, then start Outbox again.',
      { cause: error },
    );
  }
}
