/**
 * The export's table lists against the migrated schema of the engine under test: every table is either exported
 * or named, with its reason, as left out. A table added by a migration and forgotten here would silently stay
 * behind at a move between stores (as the suppression list, the secrets, the webhooks and the bounce reports
 * once did).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXCLUDED_TABLES, EXPORTED_TABLES } from '../../src/store/transfer.js';
import type { Store } from '../../src/store/connection.js';
import { makeTempDir, openTestStore, testEngine } from '../support/context.js';

let opened: { store: Store; dispose(): Promise<void> };

beforeAll(async () => {
  opened = await openTestStore(makeTempDir());
});
afterAll(() => opened.dispose());

async function schemaTables(store: Store): Promise<string[]> {
  const query =
    testEngine === 'postgres'
      ? sql<{ name: string }>`select tablename as name from pg_tables where schemaname = 'public'`
      : // FTS5 keeps its index in shadow tables named after the virtual table; they are the virtual table's own.
        sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite\\_%' escape '\\'`;
  const { rows } = await query.execute(store.db);
  return rows.map((r) => r.name).filter((name) => !name.startsWith('kysely_'));
}

describe('export and import cover the schema', () => {
  it('every table of the migrated schema is exported or left out with a reason', async () => {
    const exported = new Set(EXPORTED_TABLES.map((t) => t.name as string));
    const excluded = new Set(Object.keys(EXCLUDED_TABLES));
    const tables = await schemaTables(opened.store);
    const virtualShadows = testEngine === 'sqlite' ? await sqliteVirtualShadows(opened.store) : new Set<string>();
    const uncovered = tables.filter((name) => !exported.has(name) && !excluded.has(name) && !virtualShadows.has(name));
    expect(uncovered, 'tables neither in EXPORTED_TABLES nor in EXCLUDED_TABLES (store/transfer.ts)').toEqual([]);
    // And no list names a table the schema does not have.
    const known = new Set(tables);
    expect([...exported].filter((name) => !known.has(name))).toEqual([]);
    expect([...excluded].filter((name) => !known.has(name) && name !== 'mail_search')).toEqual([]);
  });
});

/** The virtual tables (FTS5) and their shadow tables, which SQLite writes itself from the mails. */
async function sqliteVirtualShadows(store: Store): Promise<Set<string>> {
  const { rows } = await sql<{
    name: string;
  }>`select name from sqlite_master where type = 'table' and sql like 'CREATE VIRTUAL TABLE%'`.execute(store.db);
  const shadows = new Set<string>();
  const all = await schemaTables(store);
  for (const { name } of rows) {
    shadows.add(name);
    for (const table of all) if (table.startsWith(`${name}_`)) shadows.add(table);
  }
  return shadows;
}
