/**
 * Query plans of the hot path (issue 4: "check the plans with EXPLAIN at 1M mails on both engines"): the
 * list page per sort (page 1 and a deep keyset page), with a status filter, a text search through the
 * trigram index (rare and common), a received-date range and the last page (issue 8), the worker's claim,
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
import { MAIL_SORTS } from '@outbox/contract';
import { claimDueMails } from '../server/src/delivery/queue.repository.js';
import {
  countMailRowsUpTo,
  type SearchCandidates,
  findSearchCandidates,
  getIdBounds,
  getStatusCounts,
  listMailRows,
  SORT_COLUMNS,
  sortValueOf,
} from '../server/src/mail/mail.repository.js';
import { SQLITE_FILE_NAME } from '../server/src/store/connection.js';
import type { Database } from '../server/src/store/schema.js';

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

for (const sort of MAIL_SORTS) {
  await planOf(`list, sort=${sort}, page 1 (limit 50)`, () => listMailRows(db, engine, { sort, order: 'desc', limit: 50 }));
  // A deep page: the keyset cursor of the row at 80 % of the table in this order.
  const offset = Math.floor(total * 0.8);
  const deepRow = only
    ? undefined
    : await db
        .selectFrom('mails')
        .selectAll()
        .orderBy(sql.ref(SORT_COLUMNS[sort]), 'desc')
        .orderBy('id', 'desc')
        .offset(offset)
        .limit(1)
        .executeTakeFirst();
  if (deepRow && !only) {
    await planOf(`list, sort=${sort}, deep page (after row ${offset.toLocaleString('en')})`, () =>
      listMailRows(db, engine, {
        sort,
        order: 'desc',
        limit: 50,
        cursor: { sort, order: 'desc', value: sortValueOf(deepRow, sort), id: deepRow.id, direction: 'next' },
      }),
    );
  }
}
await planOf('list, status=4 (ProviderError), sort=receivedDate', () =>
  listMailRows(db, engine, { sort: 'receivedDate', order: 'desc', limit: 50, statuses: [4] }),
);
// Text search (issue 8): the service first asks the trigram index for the newest 2,001 candidates; up to
// 2,000 are read by id, more means a common word whose page walks the sort index (mail.service.ts).
const CAP = 2_000;
const LIMITS = { cap: CAP, wordRows: 10_000 };
const idsOf = (found: SearchCandidates) => (found.kind === 'few' ? found.ids : found.kind === 'many' ? found.newest : []);
for (const [word, kind] of [
  ['kowalski77', 'rare'],
  ['kowalski7', 'medium'],
  ['shipped', 'common'],
] as const) {
  await planOf(`search candidates, q=${word} (${kind}): trigram index, newest ${CAP + 1} (PostgreSQL: the planner's estimate first)`, () =>
    findSearchCandidates(db, engine, { search: word }, LIMITS),
  );
}
const rareIds = idsOf(await findSearchCandidates(db, engine, { search: 'kowalski77' }, LIMITS));
await planOf(`list, q=kowalski77 (rare: its ${rareIds.length} candidates read by id and sorted)`, () =>
  listMailRows(db, engine, { sort: 'receivedDate', order: 'desc', limit: 50, search: 'kowalski77', candidateIds: rareIds }),
);
await planOf('list, q=kowalski77 status=4 sort=to (rare, with a status filter)', () =>
  listMailRows(db, engine, { sort: 'to', order: 'desc', limit: 50, search: 'kowalski77', statuses: [4], candidateIds: rareIds }),
);
await planOf('count, q=kowalski77 (rare: exact, candidates by id)', () =>
  countMailRowsUpTo(db, { search: 'kowalski77', candidateIds: rareIds }, rareIds.length + 1),
);
await planOf('list, q=kowalski7 (medium, 5,747 matches: more than 2,000 candidates, so the sort index is walked)', () =>
  listMailRows(db, engine, { sort: 'receivedDate', order: 'desc', limit: 50, search: 'kowalski7' }),
);
await planOf('list, q=shipped (common: the sort index walked, LIKE on each row)', () =>
  listMailRows(db, engine, { sort: 'receivedDate', order: 'desc', limit: 50, search: 'shipped' }),
);
await planOf('list, q=shipped status=4 (common, one status: (status, received_at) walked)', () =>
  listMailRows(db, engine, { sort: 'receivedDate', order: 'desc', limit: 50, search: 'shipped', statuses: [4] }),
);
const commonSample = idsOf(await findSearchCandidates(db, engine, { search: 'shipped' }, LIMITS)).slice(0, 500);
await planOf('count, q=shipped status=4 (common: matches among the newest 500 candidates, for the estimate)', () =>
  countMailRowsUpTo(db, { search: 'shipped', statuses: [4], candidateIds: commonSample }, commonSample.length + 1),
);
await planOf('id bounds (for the estimate)', () => getIdBounds(db));

// Received-date range (issue 8): relative to the newest mail.
const newest = Number(
  (
    await db
      .selectFrom('mails')
      .select((eb) => eb.fn.max('received_at').as('t'))
      .executeTakeFirstOrThrow()
  ).t ?? Date.now(),
);
const hoursAgo = (hours: number) => newest - hours * 3_600_000;
await planOf('count, last 24 h (capped at 10,001, index only)', () => countMailRowsUpTo(db, { receivedFrom: hoursAgo(24) }, 10_001));
await planOf('count, last 24 h status=0,4 (capped at 10,001, index only)', () =>
  countMailRowsUpTo(db, { receivedFrom: hoursAgo(24), statuses: [0, 4] }, 10_001),
);
await planOf('list, last 24 h, sort=receivedDate', () =>
  listMailRows(db, engine, { sort: 'receivedDate', order: 'desc', limit: 50, receivedFrom: hoursAgo(24) }),
);
await planOf('list, last 24 h status=4, sort=receivedDate', () =>
  listMailRows(db, engine, { sort: 'receivedDate', order: 'desc', limit: 50, receivedFrom: hoursAgo(24), statuses: [4] }),
);
await planOf('list, last 1 h, sort=subject (few rows: read by date and sorted)', () =>
  listMailRows(db, engine, { sort: 'subject', order: 'desc', limit: 50, receivedFrom: hoursAgo(1), fewRows: true }),
);
await planOf('list, last 7 d, sort=subject (many rows: the sort index walked, date filtered)', () =>
  listMailRows(db, engine, { sort: 'subject', order: 'desc', limit: 50, receivedFrom: hoursAgo(168) }),
);
// The bounded walk (mail.service.ts listTuning.walkRows): a common search, or a large date range sorted by
// another column, looks at 5,000 rows of the sort's index at most; when they hold less than a page, the
// matches are read through their own index and sorted (`fewRows`).
await planOf('list, q=shipped sort=subject, bounded walk (5,000 rows of the subject index; every match sorts under O: none found)', () =>
  listMailRows(db, engine, { sort: 'subject', order: 'desc', limit: 50, search: 'shipped', walkLimit: 5_000 }),
);
await planOf('list, q=shipped sort=subject, then: the matches through the trigram index, sorted', () =>
  listMailRows(db, engine, { sort: 'subject', order: 'desc', limit: 50, search: 'shipped', fewRows: true }),
);
await planOf('list, q=shipped sort=to, bounded walk (matches spread along the order: a page found)', () =>
  listMailRows(db, engine, { sort: 'to', order: 'desc', limit: 50, search: 'shipped', walkLimit: 5_000 }),
);
await planOf('list, last 24 h sort=status, bounded walk', () =>
  listMailRows(db, engine, { sort: 'status', order: 'desc', limit: 50, receivedFrom: hoursAgo(24), walkLimit: 5_000 }),
);
await planOf('list, last 24 h sort=status, then: the range through the date index, sorted', () =>
  listMailRows(db, engine, { sort: 'status', order: 'desc', limit: 50, receivedFrom: hoursAgo(24), fewRows: true }),
);
await planOf('list, last page (sort=to, read from the far end)', () =>
  listMailRows(db, engine, {
    sort: 'to',
    order: 'desc',
    limit: 50,
    cursor: { sort: 'to', order: 'desc', value: null, id: null, direction: 'prev' },
  }),
);
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
