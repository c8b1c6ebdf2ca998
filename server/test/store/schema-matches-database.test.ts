/**
 * `store/schema.ts` is written by hand beside the migrations; this test keeps the two from drifting. It reads the
 * `Database` interface with the TypeScript compiler (no generated copy to keep in step) and compares every table
 * with the migrated store of the engine under test: the same tables, the same columns, the same nullability, and
 * the same kind of value (number, string or bytes). A migration that adds a column the type forgets, or a type
 * that names a column no migration made, fails here rather than at the first query that touches it.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import ts from 'typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Store } from '../../src/store/connection.js';
import { makeTempDir, openTestStore, testEngine } from '../support/context.js';

type ValueKind = 'number' | 'string' | 'bytes';
interface ColumnShape {
  kind: ValueKind;
  nullable: boolean;
}
type TableShapes = Map<string, Map<string, ColumnShape>>;

const schemaFile = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/store/schema.ts');
/** Kysely's own bookkeeping: made by its migrator, never queried through `Database`. */
const MIGRATOR_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);
/**
 * SQLite's full-text index of the list's search (an FTS5 virtual table and the shadow tables FTS5 keeps for it):
 * the engine's own, read by the list repository's SQLite statement in raw SQL, so not part of `Database`.
 */
const SQLITE_SEARCH_INDEX = /^mails_fts(_|$)/;

/** The selected type of a column: `Generated<T>` is T, `ColumnType<S, I, U>` is S. */
function selectedType(node: ts.TypeNode): ts.TypeNode {
  if (ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName)) {
    const name = node.typeName.text;
    if ((name === 'Generated' || name === 'ColumnType') && node.typeArguments?.[0]) return node.typeArguments[0];
  }
  return node;
}

/** A union's members, with schema.ts's own type aliases (`RecipientOutcome`) read as what they stand for. */
function membersOf(node: ts.TypeNode, aliases: ReadonlyMap<string, ts.TypeNode>): ts.TypeNode[] {
  if (ts.isUnionTypeNode(node)) return node.types.flatMap((member) => membersOf(member, aliases));
  const alias = ts.isTypeReferenceNode(node) ? aliases.get(node.typeName.getText()) : undefined;
  return alias ? membersOf(alias, aliases) : [node];
}

function shapeOfType(node: ts.TypeNode, aliases: ReadonlyMap<string, ts.TypeNode>, where: string): ColumnShape {
  const parts = membersOf(node, aliases);
  const nullable = parts.some((part) => ts.isLiteralTypeNode(part) && part.literal.kind === ts.SyntaxKind.NullKeyword);
  const kinds = new Set<ValueKind>();
  for (const part of parts) {
    if (ts.isLiteralTypeNode(part)) {
      if (part.literal.kind === ts.SyntaxKind.NullKeyword) continue;
      kinds.add(ts.isStringLiteral(part.literal) ? 'string' : 'number');
    } else if (part.kind === ts.SyntaxKind.NumberKeyword) kinds.add('number');
    else if (part.kind === ts.SyntaxKind.StringKeyword) kinds.add('string');
    else if (ts.isTypeReferenceNode(part) && ['Buffer', 'Uint8Array'].includes(part.typeName.getText())) kinds.add('bytes');
    else throw new Error(`${where}: a column type the test does not know (${part.getText()}); teach shapeOfType it`);
  }
  if (kinds.size !== 1) throw new Error(`${where}: a column of ${kinds.size} kinds of value`);
  return { kind: [...kinds][0]!, nullable };
}

/**
 * Every table of `Database` in schema.ts, with its columns' shapes, less those whose interface's comment begins
 * "PostgreSQL only" when the engine is SQLite.
 */
function readDeclaredTables(engine: 'sqlite' | 'postgres'): TableShapes {
  const source = ts.createSourceFile(schemaFile, ts.sys.readFile(schemaFile)!, ts.ScriptTarget.Latest, true);
  const interfaces = new Map<string, ts.InterfaceDeclaration>();
  const aliases = new Map<string, ts.TypeNode>();
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node)) interfaces.set(node.name.text, node);
    if (ts.isTypeAliasDeclaration(node)) aliases.set(node.name.text, node.type);
  });
  const tables: TableShapes = new Map();
  for (const member of interfaces.get('Database')!.members) {
    if (!ts.isPropertySignature(member) || !member.type || !ts.isTypeReferenceNode(member.type)) continue;
    const table = member.name.getText();
    const declaration = interfaces.get(member.type.typeName.getText());
    if (!declaration) throw new Error(`Database.${table}: its interface ${member.type.typeName.getText()} is not in schema.ts`);
    const comment = ts.getJSDocCommentsAndTags(declaration).map((doc) => doc.getText());
    if (engine === 'sqlite' && comment.some((text) => /^\/\*\*\s*PostgreSQL only/.test(text))) continue;
    const columns = new Map<string, ColumnShape>();
    for (const column of declaration.members) {
      if (!ts.isPropertySignature(column) || !column.type) continue;
      const name = column.name.getText();
      columns.set(name, shapeOfType(selectedType(column.type), aliases, `${table}.${name}`));
    }
    tables.set(table, columns);
  }
  return tables;
}

function kindOfSqlType(type: string): ValueKind {
  const lower = type.toLowerCase();
  if (/int|real|double|numeric|float/.test(lower)) return 'number';
  if (/char|text|clob/.test(lower)) return 'string';
  if (/blob|bytea/.test(lower)) return 'bytes';
  throw new Error(`a column of SQL type ${type} the test does not know`);
}

async function readDatabaseTables(store: Store): Promise<TableShapes> {
  const tables: TableShapes = new Map();
  const add = (table: string, column: string, type: string, nullable: boolean) => {
    if (MIGRATOR_TABLES.has(table)) return;
    const columns = tables.get(table) ?? new Map<string, ColumnShape>();
    columns.set(column, { kind: kindOfSqlType(type), nullable });
    tables.set(table, columns);
  };
  if (store.engine === 'postgres') {
    const { rows } = await sql<{ table_name: string; column_name: string; data_type: string; is_nullable: string }>`
      select table_name, column_name, data_type, is_nullable from information_schema.columns
      where table_schema = current_schema() order by table_name, ordinal_position`.execute(store.db);
    for (const row of rows) add(row.table_name, row.column_name, row.data_type, row.is_nullable === 'YES');
  } else {
    const { rows } = await sql<{ table_name: string; column_name: string; type: string; notnull: number; pk: number }>`
      select m.name as table_name, c.name as column_name, c.type, c."notnull" as "notnull", c.pk
      from sqlite_schema m join pragma_table_info(m.name) c
      where m.type = 'table' and m.name not like 'sqlite\\_%' escape '\\' order by m.name, c.cid`.execute(store.db);
    // A primary key is read as NOT NULL, as PostgreSQL makes it: an INTEGER PRIMARY KEY is SQLite's rowid, and a
    // text one would take a NULL only through a quirk SQLite keeps for old files (its docs, "CREATE TABLE"), which
    // no writer reaches: each names its key.
    for (const row of rows) {
      if (SQLITE_SEARCH_INDEX.test(row.table_name)) continue;
      add(row.table_name, row.column_name, row.type, row.notnull === 0 && row.pk === 0);
    }
  }
  return tables;
}

let store: Store;
let dispose: () => Promise<void>;
beforeAll(async () => {
  ({ store, dispose } = await openTestStore(makeTempDir()));
});
afterAll(() => dispose());

it(`every table and column of store/schema.ts is what the migrations made on ${testEngine}, and nothing more`, async () => {
  const declared = readDeclaredTables(store.engine);
  const actual = await readDatabaseTables(store);
  expect([...declared.keys()].sort(), 'tables').toEqual([...actual.keys()].sort());
  const differences: string[] = [];
  for (const [table, columns] of declared) {
    const made = actual.get(table)!;
    for (const column of made.keys())
      if (!columns.has(column)) differences.push(`${table}.${column}: made by a migration, not in schema.ts`);
    for (const [column, shape] of columns) {
      const madeShape = made.get(column);
      if (!madeShape) differences.push(`${table}.${column}: in schema.ts, made by no migration`);
      else if (madeShape.kind !== shape.kind)
        differences.push(`${table}.${column}: a ${shape.kind} in schema.ts, a ${madeShape.kind} in the store`);
      else if (madeShape.nullable !== shape.nullable)
        differences.push(
          `${table}.${column}: ${shape.nullable ? 'nullable' : 'not null'} in schema.ts, ${madeShape.nullable ? 'nullable' : 'not null'} in the store`,
        );
    }
  }
  expect(differences).toEqual([]);
});
