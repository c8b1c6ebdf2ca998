/**
 * A multi-row INSERT compiled without Kysely's query tree. The intake writes five tables per group commit, a
 * batch of 500 mails ~10,000 values; `insertInto().values()` builds a node per value, freezes it and visits
 * it to make the text, and Kysely held ~10 % of the SMTP listener's busy thread. Here the text is
 * made once per table, column list and row count, and the values are laid out in one flat array, in the same
 * order and unconverted, as Kysely's compiler binds them: the drivers see the same parameters.
 *
 * The result is a Kysely `Compilable`, so it runs wherever a query does: `db.executeQuery(q.compile())`, or
 * a StatementBatch (statement-batch.ts), which renumbers PostgreSQL's `$n` when it joins statements.
 */
import { CompiledQuery, type Compilable, type Insertable } from 'kysely';
import type { DbOrTrx, Engine } from './connection.js';
import type { Database } from './schema.js';
import { engineOf } from './statement-batch.js';

/** Texts kept: one per table, columns, row count and RETURNING clause seen; bounded in case a caller varies. */
const MAX_TEXTS = 500;
const texts = new Map<string, string>();

function quote(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`;
}

function insertText(engine: Engine, table: string, columns: readonly string[], rowCount: number, returning: string): string {
  const key = `${engine}\u0000${table}\u0000${columns.join(',')}\u0000${rowCount}\u0000${returning}`;
  let text = texts.get(key);
  if (text !== undefined) return text;
  const width = columns.length;
  const tuples: string[] = [];
  for (let row = 0; row < rowCount; row += 1) {
    const marks: string[] = [];
    for (let column = 0; column < width; column += 1) marks.push(engine === 'postgres' ? `$${row * width + column + 1}` : '?');
    tuples.push(`(${marks.join(', ')})`);
  }
  text = `insert into ${quote(table)} (${columns.map(quote).join(', ')}) values ${tuples.join(', ')}${returning ? ` returning ${returning}` : ''}`;
  if (texts.size >= MAX_TEXTS) texts.delete(texts.keys().next().value!);
  texts.set(key, text);
  return text;
}

/**
 * `insert into <table> (<columns>) values (…), (…) [returning …]`, the columns being those the first row
 * gives a value (an `undefined` value is no value, as with Kysely). Rows that do not all give the same
 * columns are compiled by Kysely, which writes `default` for a missing value (`null` on SQLite, which has no
 * DEFAULT in a VALUES list). `returning` is SQL text written by the caller.
 */
export function insertRows<T extends keyof Database & string>(
  db: DbOrTrx,
  table: T,
  rows: ReadonlyArray<Insertable<Database[T]>>,
  returning = '',
): Compilable {
  if (rows.length === 0) throw new RangeError(`insertRows: no rows for ${table}`);
  const first = rows[0] as Record<string, unknown>;
  const columns = Object.keys(first).filter((column) => first[column] !== undefined);
  const parameters: unknown[] = new Array(rows.length * columns.length);
  let at = 0;
  for (const row of rows as ReadonlyArray<Record<string, unknown>>) {
    let given = 0;
    for (const column of columns) {
      const value = row[column];
      if (value === undefined) return viaKysely(db, table, rows, returning);
      parameters[at] = value;
      at += 1;
    }
    for (const column in row) if (row[column] !== undefined) given += 1;
    if (given !== columns.length) return viaKysely(db, table, rows, returning);
  }
  const sql = insertText(engineOf(db), table, columns, rows.length, returning);
  return { compile: () => CompiledQuery.raw(sql, parameters) };
}

function viaKysely<T extends keyof Database & string>(
  db: DbOrTrx,
  table: T,
  rows: ReadonlyArray<Insertable<Database[T]>>,
  returning: string,
): Compilable {
  return {
    compile() {
      const compiled = db
        .insertInto(table)
        .values(rows as never)
        .compile();
      return returning ? CompiledQuery.raw(`${compiled.sql} returning ${returning}`, [...compiled.parameters]) : compiled;
    },
  };
}
