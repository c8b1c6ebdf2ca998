/**
 * The applications' events table (the transactional outbox of webhooks; migrations/006-application-events.ts).
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
 * it, and it costs its insert and nothing more, where the dispatcher's mark was one more row version per event
 * (issue 36). The check is part of the INSERT (an uncorrelated subquery per row over the few endpoint rows), so
 * it is what the transaction sees when it writes, with no round trip of its own.
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
/** Texts kept, one per engine and row count (a group commit's sizes repeat). */
const insertTexts = new Map<string, string>();

/** `insert into application_events (…, fanned_out_at) values (…, <created_at unless an endpoint is enabled>), …`. */
function insertEvents(db: DbOrTrx, rows: readonly NewApplicationEventRow[]): Compilable {
  const postgres = engineOf(db) === 'postgres';
  const key = `${postgres ? 'pg' : 'sqlite'}:${rows.length}`;
  let text = insertTexts.get(key);
  if (text === undefined) {
    const width = EVENT_COLUMNS.length + 1;
    const mark = (n: number) => (postgres ? `$${n}` : '?');
    const tuples: string[] = [];
    for (let row = 0; row < rows.length; row += 1) {
      const first = row * width + 1;
      const marks = EVENT_COLUMNS.map((_, column) => mark(first + column));
      const createdAt = postgres ? `${mark(first + EVENT_COLUMNS.length)}::bigint` : mark(first + EVENT_COLUMNS.length);
      tuples.push(`(${marks.join(', ')}, (select ${createdAt} where not exists (select 1 from webhook_endpoints where enabled = 1)))`);
    }
    text = `insert into application_events (${EVENT_COLUMNS.join(', ')}, fanned_out_at) values ${tuples.join(', ')}`;
    if (insertTexts.size >= 1_000) insertTexts.clear();
    insertTexts.set(key, text);
  }
  const parameters: unknown[] = [];
  for (const row of rows) {
    for (const column of EVENT_COLUMNS) parameters.push(row[column] ?? null);
    parameters.push(row.created_at);
  }
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
