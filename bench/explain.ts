/**
 * Query plans of the hot path ("check the plans with EXPLAIN at 1M mails on both engines"): the
 * list page per sort (page 1 and a deep keyset page), with a status filter, a text search through the
 * trigram index (rare and common), a received-date range and the last page, the worker's claim,
 * and the status counters. It captures the exact SQL the repositories issue (through
 * Kysely's query log) and asks the engine for its plan. Prints Markdown.
 *
 *   DATA_DIR=/path/with/1M npx tsx bench/explain.ts                      # SQLite
 *   DATABASE_URL=postgres://... npx tsx bench/explain.ts                 # PostgreSQL (EXPLAIN ANALYZE)
 *   EXPLAIN_ONLY='bounded walk|then:' …                                   # only the plans whose title holds one
 *
 * Fill the store first with `npm run outbox -- demo --count 1000000`.
 */
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { MAIL_SORTS, type MailSort } from '@outbox/contract';
import { claimDueMails } from '../server/src/delivery/delivery.repository.js';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import { findMatchingIds } from '../server/src/list/list-matches.repository.js';
import { readIdsPage, readIndexPage, readSortedPage, type PageRead } from '../server/src/list/list.repository.js';
import type { MatchSource, ListFilter } from '../server/src/list/list-plan.js';
import { LIST_SORTS, type Position } from '../server/src/list/list-sorts.js';
import { SQLITE_FILE_NAME } from '../server/src/store/connection.js';
import type { Database } from '../server/src/store/schema.js';
import { newestReceivedAt } from './support/random-list.js';

const databaseUrl = process.env.DATABASE_URL;
const engine = databaseUrl ? 'postgres' : 'sqlite';
let captured: CompiledQuery | undefined;
const log = (event: { level: string; query: CompiledQuery }) => {
  // The statement of interest, not the transaction control around it.
  if (event.level === 'query' && !/^\s*(begin|commit|rollback)/i.test(event.query.sql)) captured = event.query;
};

let raw: { explain(query: CompiledQuery): Promise<string>; close(): Promise<void> };
let db: Kysely<Database>;
if (engine === 'sqlite') {
  const file = path.join(path.resolve(process.env.DATA_DIR ?? './data'), SQLITE_FILE_NAME);
  const sqlite = new SqliteDatabase(file, { fileMustExist: true });
  db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log });
  raw = {
    explain: async (query) =>
      (sqlite.prepare(`EXPLAIN QUERY PLAN ${query.sql}`).all(...(query.parameters as unknown[])) as Array<{ detail: string }>)
        .map((r) => r.detail)
        .join('\n'),
    close: async () => db.destroy(),
  };
} else {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log });
  raw = {
    // ANALYZE runs the statement: inside a transaction that is always rolled back, so the claim claims nothing.
    explain: async (query) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await client.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${query.sql}`, query.parameters as unknown[]);
        return result.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    },
    close: async () => db.destroy(),
  };
}

/** `EXPLAIN_ONLY=text|text`: only the plans whose title contains one of them (and no deep-page lookups). */
const only = process.env.EXPLAIN_ONLY?.split('|');

async function planOf(title: string, run: () => Promise<unknown>): Promise<void> {
  if (only && !only.some((text) => title.includes(text))) return;
  captured = undefined;
  const started = performance.now();
  await run();
  const ms = performance.now() - started;
  // Set by the log callback during run(); TypeScript cannot see that and narrows it to undefined.
  const query = captured as CompiledQuery | undefined;
  if (!query) throw new Error(`${title}: no query captured`);
  const plan = await raw.explain(query);
  // A list of candidate ids is thousands of placeholders: shown as one.
  const shown = query.sql.replace(/\((?:(?:\?|\$\d+), ){4,}(?:\?|\$\d+)\)/g, (list) => `(… ${list.split(',').length} ids …)`);
  console.log(
    `### ${title}\n\n(${ms.toFixed(1)} ms as the service runs it)\n\n\`\`\`sql\n${shown.trim()}\n\`\`\`\n\n\`\`\`\n${plan}\n\`\`\`\n`,
  );
}

const total = Number(
  (
    await db
      .selectFrom('mails')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow()
  ).n,
);
console.log(`## ${engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${total.toLocaleString('en')} mails\n`);

// The page plans of docs/query-plans.md, as list-plan.ts chooses them; a read of several statuses is several
// statements and only the last is shown.
const page = (sort: MailSort, filter: ListFilter = {}, after?: Position): PageRead => ({ filter, sort, descending: true, after, take: 51 });
for (const sort of MAIL_SORTS) {
  await planOf(`index: sort=${sort}, page 1 (limit 50)`, () => readIndexPage(db, engine, page(sort)));
  // A deep page: the keyset position of the row at 80 % of the table in this order.
  const offset = Math.floor(total * 0.8);
  const column = LIST_SORTS[sort].column;
  const deepRow = only
    ? undefined
    : await db
        .selectFrom('mails')
        .selectAll()
        .orderBy(sql.ref(column), 'desc')
        .orderBy('id', 'desc')
        .offset(offset)
        .limit(1)
        .executeTakeFirst();
  if (deepRow) {
    await planOf(`index: sort=${sort}, deep page (after row ${offset.toLocaleString('en')})`, () =>
      readIndexPage(db, engine, page(sort, {}, { value: deepRow[column], id: deepRow.id })),
    );
  }
  await planOf(`index: sort=${sort} status=1,5 (one seek per status, merged)`, () =>
    readIndexPage(db, engine, page(sort, { statuses: [1, 5] })),
  );
}
const newest = await newestReceivedAt(db);
const hoursAgo = (hours: number) => newest - hours * 3_600_000;
// The count (the matches' ids, up to the cap + 1) decides between gather and walk; a search with statuses is
// counted through whichever of the two sources reads fewer rows (chooseMatchSource).
const searchSource: MatchSource = engine === 'sqlite' ? 'trigrams' : 'engine';
for (const [filter, source] of [
  [{ search: 'kowalski77' }, searchSource],
  [{ search: 'shipped' }, searchSource],
  [{ search: 'shipped', statuses: [2] }, searchSource],
  [{ search: 'shipped', statuses: [2] }, 'seek'],
  [{ search: 'shipped', receivedFrom: hoursAgo(1) }, 'seek'],
  [{ receivedFrom: hoursAgo(24) }, engine === 'sqlite' ? 'seek' : 'engine'],
] as Array<[ListFilter, MatchSource]>) {
  await planOf(`count through ${source}: ${JSON.stringify(filter)}`, () => findMatchingIds(db, engine, filter, 1_001, source));
}
const rare = await findMatchingIds(db, engine, { search: 'kowalski77' }, 1_001, searchSource);
await planOf(`gather: q=kowalski77 sort=to (its ${rare.length} matches by id, sorted)`, () =>
  readIdsPage(db, engine, page('to', { search: 'kowalski77' }), rare),
);
await planOf('walk: q=shipped (received index, LIKE on each row, 5,000 entries at most)', () =>
  readIndexPage(db, engine, page('receivedDate', { search: 'shipped' }), 5_000),
);
await planOf('walk: q=shipped status=2 (the status index walked)', () =>
  readIndexPage(db, engine, page('receivedDate', { search: 'shipped', statuses: [2] }), 5_000),
);
await planOf('walk: last 7 d sort=subject', () => readIndexPage(db, engine, page('subject', { receivedFrom: hoursAgo(168) }), 5_000));
await planOf('walk: q=shipped sort=subject (every match sorts under O: none within the bound)', () =>
  readIndexPage(db, engine, page('subject', { search: 'shipped' }), 5_000),
);
await planOf('sort: q=shipped sort=subject (every match through the trigram index, sorted)', () =>
  readSortedPage(db, engine, page('subject', { search: 'shipped' }), searchSource),
);
await planOf('index: last 24 h status=4 (a range of the status index)', () =>
  readIndexPage(db, engine, page('receivedDate', { receivedFrom: hoursAgo(24), statuses: [4] })),
);
await planOf('index: last page (sort=to, read from the far end)', () => readIndexPage(db, engine, { ...page('to'), descending: false }));
await planOf('status counters (meta.total and counts)', () => getStatusCounts(db));
await planOf('worker claim (inside a transaction, rolled back)', async () => {
  await db
    .transaction()
    .execute(async (trx) => {
      await claimDueMails(trx, engine, { now: Date.now() + 40 * 86_400_000, limit: 50, owner: 'explain', leaseExpiresAt: Date.now() });
      throw new Error('rollback');
    })
    .catch(() => undefined);
});
await raw.close();
