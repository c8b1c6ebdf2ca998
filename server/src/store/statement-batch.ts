/**
 * Writes that may reach the store as one statement. On PostgreSQL every statement of a transaction is a round
 * trip to the server, and a group commit of new mails writes six tables (the mails, their recipients and
 * contents, their events and application events, the status counter). None of those writes reads what another
 * wrote, so on PostgreSQL they go as one statement of data-modifying CTEs,
 * `with w0 as (insert …), w1 as (insert …), … select 1`: one round trip instead of one per table.
 * SQLite runs in this process, where a statement costs no round trip: each one runs when it is added.
 *
 * What may be added: writes whose effects no other write of the same batch needs to see. PostgreSQL runs the
 * sub-statements of one statement against one snapshot, in no fixed order; foreign keys are checked when the
 * whole statement ends, so a recipient may reference a mail inserted beside it. A statement that must lock
 * rows in a given order (the status counters, more than one row) is run alone after a `flush()`.
 */
import { CompiledQuery, PostgresAdapter, type Compilable } from 'kysely';
import type { DbOrTrx, Engine } from './connection.js';

/** PostgreSQL's wire protocol takes at most 65,535 parameters per statement; a batch flushes before that. */
const MAX_PARAMETERS = 60_000;

export interface StatementBatch {
  /** SQLite: runs the write now. PostgreSQL: keeps it for the next `flush()` (sooner when the parameters add up). */
  add(query: Compilable): Promise<void>;
  /** Runs what was kept, as one statement. */
  flush(): Promise<void>;
}

/** Which engine a connection or transaction talks to, from its Kysely adapter. */
export function engineOf(db: DbOrTrx): Engine {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

export function createStatementBatch(db: DbOrTrx): StatementBatch {
  if (engineOf(db) === 'sqlite') {
    return {
      async add(query) {
        await db.executeQuery(query.compile());
      },
      async flush() {},
    };
  }
  let kept: CompiledQuery[] = [];
  let parameterCount = 0;

  async function flush(): Promise<void> {
    const queries = kept;
    kept = [];
    parameterCount = 0;
    if (queries.length === 0) return;
    if (queries.length === 1) {
      await db.executeQuery(queries[0]!);
      return;
    }
    // Each query was compiled alone, its placeholders numbered from $1: renumber them after the ones before.
    // Kysely writes values only as placeholders and names as quoted identifiers, so `$n` is always one.
    let offset = 0;
    const parameters: unknown[] = [];
    const parts = queries.map((query, i) => {
      const shift = offset;
      offset += query.parameters.length;
      parameters.push(...query.parameters);
      return `w${i} as (${query.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + shift}`)})`;
    });
    await db.executeQuery(CompiledQuery.raw(`with ${parts.join(', ')} select 1`, parameters));
  }

  return {
    async add(query) {
      const compiled = query.compile();
      if (parameterCount + compiled.parameters.length > MAX_PARAMETERS) await flush();
      kept.push(compiled);
      parameterCount += compiled.parameters.length;
    },
    flush,
  };
}
