/**
 * The applications' events table (the transactional outbox of webhooks; store/migrations/006-application-events.ts).
 * Writers append in the transaction of the change the event describes; webhook delivery reads what has not
 * been fanned out yet.
 */
import { pooledRandomBytes } from '../random-pool.js';
import type { DbOrTrx } from '../store/connection.js';
import { CompiledQuery, type Compilable } from 'kysely';
import { engineOf, type StatementBatch } from '../store/statement-batch.js';
import type { ApplicationEventRow, NewApplicationEventRow } from '../store/schema.js';

/** Rows per INSERT: well under SQLite's 32,766 bound parameters with 8 columns. */
const INSERT_CHUNK = 500;

/**
 * A new event id: `evt_` and 26 characters of base32 of 16 bytes, unique without coordination: the current
 * millisecond (6 bytes, big-endian), then 80 random bits. The time comes first so that the ids of one group
 * commit sit side by side in the unique index on `id`: a random id put each event's index entry on its own
 * page, a page written to the WAL (SQLite) or heap (PostgreSQL) per event at every commit.
 */
export function newEventId(): string {
  const bytes = pooledRandomBytes(16);
  bytes.writeUIntBE(Date.now(), 0, 6);
  return `evt_${base32(bytes, 0, 16)}`;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
function base32(bytes: Buffer, start: number, end: number): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (let i = start; i < end; i++) {
    value = ((value << 8) | bytes[i]!) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/**
 * Appends events in the caller's transaction, in order; through `writes` (store/statement-batch.ts) when given.
 * An event no enabled endpoint could receive is written fanned out already (`fanned_out_at` = its creation): an
 * endpoint gets the events that happen while it exists and is enabled (docs/webhooks.md), so nobody will ask for
 * it, and it costs its insert and nothing more, where the dispatcher's mark was one more row version per event.
 * The check is part of the INSERT (one uncorrelated subquery over the few endpoint rows), so it is
 * what the transaction sees when it writes, with no round trip of its own.
 */
export async function appendApplicationEvents(
  db: DbOrTrx,
  events: readonly NewApplicationEventRow[],
  writes?: StatementBatch,
): Promise<void> {
  for (let start = 0; start < events.length; start += INSERT_CHUNK) {
    const insert = insertEvents(db, events.slice(start, start + INSERT_CHUNK));
    // The sub-statements of one statement run in no fixed order: the chunks before go first, so `seq` keeps the order.
    if (writes && start > 0) await writes.flush();
    if (writes) await writes.add(insert);
    else await db.executeQuery(insert.compile());
  }
}

const EVENT_COLUMNS = ['id', 'type', 'mail_id', 'mail_seq', 'api_key_id', 'created_at', 'payload'] as const;
const COLUMN_TYPES = ['text', 'text', 'bigint', 'integer', 'bigint', 'bigint', 'text'] as const;
/** `fanned_out_at`: the event's creation unless an enabled endpoint exists, asked once per INSERT (an uncorrelated subquery over a few rows). */
const fannedOut = (createdAt: string) =>
  `case when exists (select 1 from webhook_endpoints where enabled = 1) then null else ${createdAt} end`;
const COLUMNS = `${EVENT_COLUMNS.join(', ')}, fanned_out_at`;
/** PostgreSQL: one array per column, in order (`with ordinality`, so `seq` follows the events' order); one text for any size. */
const POSTGRES_TEXT = `insert into application_events (${COLUMNS})
  select ${EVENT_COLUMNS.map((c) => `v.${c}`).join(', ')}, ${fannedOut('v.created_at')}
  from unnest(${COLUMN_TYPES.map((type, i) => `$${i + 1}::${type}[]`).join(', ')}) with ordinality as v (${EVENT_COLUMNS.join(', ')}, n)
  order by v.n`;
/** SQLite texts, one per row count (a group commit's sizes repeat). */
const sqliteTexts = new Map<number, string>();

/** `insert into application_events (…, fanned_out_at) select …, <created_at unless an endpoint is enabled> from <the rows>`. */
function insertEvents(db: DbOrTrx, rows: readonly NewApplicationEventRow[]): Compilable {
  if (engineOf(db) === 'postgres') {
    const parameters = EVENT_COLUMNS.map((column) => rows.map((row) => row[column] ?? null));
    const compiled = CompiledQuery.raw(POSTGRES_TEXT, parameters);
    return { compile: () => compiled };
  }
  let text = sqliteTexts.get(rows.length);
  if (text === undefined) {
    const tuple = `(${EVENT_COLUMNS.map(() => '?').join(', ')})`;
    // SQLite names a VALUES list's columns column1, column2, …; the rows are read in the order written.
    text = `insert into application_events (${COLUMNS})
      select ${EVENT_COLUMNS.map((c, i) => `column${i + 1} as ${c}`).join(', ')}, ${fannedOut(`column${EVENT_COLUMNS.indexOf('created_at') + 1}`)}
      from (values ${Array.from({ length: rows.length }, () => tuple).join(', ')})`;
    if (sqliteTexts.size >= 1_000) sqliteTexts.clear();
    sqliteTexts.set(rows.length, text);
  }
  const parameters: unknown[] = [];
  for (const row of rows) for (const column of EVENT_COLUMNS) parameters.push(row[column] ?? null);
  const compiled = CompiledQuery.raw(text, parameters);
  return { compile: () => compiled };
}

/** A mail's events in the order they happened. */
export function listMailApplicationEvents(db: DbOrTrx, mailId: number): Promise<ApplicationEventRow[]> {
  return db.selectFrom('application_events').selectAll().where('mail_id', '=', mailId).orderBy('mail_seq').execute();
}

/**
 * Retention: deletes up to `limit` events created before `before`, oldest first; returns how many. Called in
 * batches by the retention purge, so no transaction holds the store for long.
 */
export async function deleteApplicationEventsBefore(db: DbOrTrx, before: number, limit: number): Promise<number> {
  const stale = await db
    .selectFrom('application_events')
    .select('seq')
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  if (stale.length === 0) return 0;
  const result = await db
    .deleteFrom('application_events')
    .where(
      'seq',
      'in',
      stale.map((row) => row.seq),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
