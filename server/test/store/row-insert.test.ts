/**
 * insertRows (store/row-insert.ts), on the engine under test: the statement made without Kysely's query tree
 * stores exactly what Kysely's `insertInto().values()` stores, RETURNING included, and rows that do not all give
 * the same columns fall back to Kysely (a missing value is the column's default).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/connection.js';
import { insertRows } from '../../src/store/row-insert.js';
import { makeTempDir, openTestStore } from '../support/context.js';

let store: Store;
let dispose: () => Promise<void>;

beforeAll(async () => {
  ({ store, dispose } = await openTestStore(makeTempDir()));
});
afterAll(() => dispose());

const operator = (username: string, extra: Record<string, unknown> = {}) => ({
  username,
  password_hash: `hash of ${username}`,
  created_at: 1_000,
  updated_at: 2_000,
  ...extra,
});

describe('insertRows', () => {
  it('writes every row and value as Kysely would, and returns what RETURNING names, in VALUES order', async () => {
    const query = insertRows(store.db, 'operators', [operator('ada'), operator('grace'), operator('"quoted"')], 'id, username');
    const compiled = query.compile();
    // One placeholder per value, and nothing of the values in the text.
    expect(compiled.parameters).toEqual([
      'ada', 'hash of ada', 1_000, 2_000,
      'grace', 'hash of grace', 1_000, 2_000,
      '"quoted"', 'hash of "quoted"', 1_000, 2_000,
    ]); // prettier-ignore
    expect(compiled.sql).not.toContain('ada');
    const { rows } = await store.db.executeQuery<{ id: number; username: string }>(compiled);
    expect(rows.map((r) => r.username)).toEqual(['ada', 'grace', '"quoted"']);
    const stored = await store.db
      .selectFrom('operators')
      .selectAll()
      .where('username', 'in', ['ada', 'grace', '"quoted"'])
      .orderBy('id')
      .execute();
    expect(stored.map((r) => [r.id, r.username, r.password_hash, r.created_at, r.updated_at])).toEqual(
      rows.map((r) => [r.id, r.username, `hash of ${r.username}`, 1_000, 2_000]),
    );
  });

  it('makes one text per table, columns and row count, whatever the values', () => {
    const a = insertRows(store.db, 'operators', [operator('x1'), operator('x2')]).compile();
    const b = insertRows(store.db, 'operators', [operator('y1'), operator('y2')]).compile();
    const c = insertRows(store.db, 'operators', [operator('z1')]).compile();
    expect(a.sql).toBe(b.sql);
    expect(c.sql).not.toBe(a.sql);
  });

  it('leaves out a column no row gives a value (undefined), as Kysely does', async () => {
    const compiled = insertRows(store.db, 'operators', [operator('nobody', { id: undefined })]).compile();
    expect(compiled.sql).not.toMatch(/"id"/);
    await store.db.executeQuery(compiled);
    expect(await store.db.selectFrom('operators').select('username').where('username', '=', 'nobody').executeTakeFirst()).toEqual({
      username: 'nobody',
    });
  });

  it('falls back to Kysely when the rows give different columns: a missing value is the default (SQLite: null)', async () => {
    const rows = [
      { name: 'first', key_hash: 'h1', created_at: 5 },
      { name: 'second', key_hash: 'h2', created_at: 6, revoked_at: 7 },
    ];
    const compiled = insertRows(store.db, 'api_keys', rows).compile();
    // Kysely's text: SQLite has no DEFAULT in a VALUES list, so Kysely writes null there.
    expect(compiled.sql).toMatch(store.engine === 'sqlite' ? /, null\)/ : /default/);
    await store.db.executeQuery(compiled);
    const stored = await store.db
      .selectFrom('api_keys')
      .select(['name', 'revoked_at'])
      .where('name', 'in', ['first', 'second'])
      .orderBy('name')
      .execute();
    expect(stored).toEqual([
      { name: 'first', revoked_at: null },
      { name: 'second', revoked_at: 7 },
    ]);
  });
});
