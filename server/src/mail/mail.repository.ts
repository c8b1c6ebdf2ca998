/**
 * All SQL that reads mails, and inserts new ones: the list (keyset paging), the per-status counters,
 * recipients, contents and the event log. Status changes, their events and counter moves are
 * `transition.repository.ts`.
 * Functions take `db | trx` first. A little over ~250 lines: the list query (keyset paging with its index
 * notes) is one piece, and the insert of new mails belongs beside the reads of what it inserted.
 */
import { sql, type SelectQueryBuilder } from 'kysely';
import type { MailSort } from '@outbox/contract';
import type { DbOrTrx, Engine } from '../store/connection.js';
import type { Database, MailRecipientRow, MailRow, NewMailRow } from '../store/schema.js';
import type { Cursor, SortValue } from './cursor.js';

export const SORT_COLUMNS = {
  receivedDate: 'received_at',
  lastUpdate: 'last_update_at',
  providerSentDate: 'provider_sent_at',
  subject: 'subject',
  status: 'status',
  from: 'from_mail',
} as const satisfies Record<MailSort, keyof MailRow>;

export type SortColumn = (typeof SORT_COLUMNS)[MailSort];

export interface MailFilter {
  statuses?: number[] | undefined;
  /** Lower-cased search text. */
  search?: string | undefined;
}

export interface ListPageQuery extends MailFilter {
  sort: MailSort;
  order: 'asc' | 'desc';
  /** undefined: every matching row. */
  limit?: number | undefined;
  cursor?: Cursor | undefined;
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * The status filter either drives the index or stays a plain filter. One status with the default sort
 * seeks `(status, received_at, id)`. With several statuses or another sort, an index on status alone would
 * make the engine fetch every matching row and sort them (200 ms for two statuses at 1M mails, 90 ms for
 * one status sorted by subject); reading the sort's own index and filtering stops after one page instead.
 * `+status` (a no-op arithmetic) is how SQLite is told not to use an index for a term.
 */
function applyFilter<O>(query: SelectQueryBuilder<Database, 'mails', O>, filter: MailFilter, sort?: MailSort) {
  let q = query;
  if (filter.statuses && filter.statuses.length > 0) {
    const seekByStatus = sort === undefined || (sort === 'receivedDate' && filter.statuses.length === 1);
    q = seekByStatus ? q.where('status', 'in', filter.statuses) : q.where(sql<number>`+status`, 'in', filter.statuses);
  }
  if (filter.search) q = q.where(sql<boolean>`search_text like ${`%${escapeLike(filter.search)}%`} escape '\\'`);
  return q;
}

/**
 * One page in the requested order. Fetches one row more than asked to learn whether another page follows
 * in the direction of travel; `prev` pages are read in reverse order and turned around.
 */
export async function listMailRows(db: DbOrTrx, query: ListPageQuery): Promise<{ rows: MailRow[]; hasMore: boolean }> {
  const column = SORT_COLUMNS[query.sort];
  const isBackwards = query.cursor?.direction === 'prev';
  const readDescending = (query.order === 'desc') !== isBackwards;
  const direction = readDescending ? 'desc' : 'asc';

  const fetch = query.limit !== undefined ? query.limit + 1 : undefined;
  const page = <Q extends SelectQueryBuilder<Database, 'mails', MailRow>>(q: Q): Q => (fetch !== undefined ? (q.limit(fetch) as Q) : q);
  let rows: MailRow[];
  if (!query.cursor) {
    rows = await page(
      applyFilter(db.selectFrom('mails').selectAll(), query, query.sort).orderBy(column, direction).orderBy('id', direction),
    ).execute();
  } else {
    // Keyset past (value, id), written as two index seeks: the rest of the rows sharing `value`, then the
    // rows beyond it. A row comparison `(column, id) < (value, id)` is one seek on PostgreSQL, but SQLite
    // only seeks on `column` and then walks every row that shares the value (all of one status, all of one
    // sender), which made deep pages of such sorts 100 times slower than page 1.
    const { value, id } = query.cursor;
    const past = readDescending ? '<' : '>';
    const sameValue = page(
      applyFilter(db.selectFrom('mails').selectAll(), query, query.sort)
        .where(column, '=', value as never)
        .where('id', past, id)
        .orderBy('id', direction),
    );
    const beyond = page(
      applyFilter(db.selectFrom('mails').selectAll(), query, query.sort)
        .where(column, past, value as never)
        .orderBy(column, direction)
        .orderBy('id', direction),
    );
    const both = db
      .selectFrom(sameValue.as('same_value'))
      .selectAll()
      .unionAll(db.selectFrom(beyond.as('beyond')).selectAll());
    rows = (await (
      fetch !== undefined
        ? both.orderBy(column, direction).orderBy('id', direction).limit(fetch)
        : both.orderBy(column, direction).orderBy('id', direction)
    ).execute()) as MailRow[];
  }
  const hasMore = query.limit !== undefined && rows.length > query.limit;
  if (hasMore) rows.pop();
  if (isBackwards) rows.reverse();
  return { rows, hasMore };
}

export function sortValueOf(row: MailRow, sort: MailSort): SortValue {
  return row[SORT_COLUMNS[sort]];
}

/** Counts a filtered list up to `cap` rows (a text search cannot use counters); more means "at least cap". */
export async function countMailRowsUpTo(db: DbOrTrx, filter: MailFilter, cap: number): Promise<number> {
  const inner = applyFilter(db.selectFrom('mails').select('id'), filter).limit(cap);
  const row = await db
    .selectFrom(inner.as('m'))
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Exact mails per status, from the counters kept with every change. */
export async function getStatusCounts(db: DbOrTrx): Promise<Map<number, number>> {
  const rows = await db.selectFrom('status_counts').select(['status', 'count']).execute();
  return new Map(rows.map((r) => [r.status, Number(r.count)]));
}

/** The earliest acceptance among mails in `status` (an index seek on (status, received_at, id)). */
export async function findOldestReceivedAt(db: DbOrTrx, status: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('mails')
    .select('received_at')
    .where('status', '=', status)
    .orderBy('received_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.received_at;
}

export async function listRecipients(db: DbOrTrx, mailIds: number[], kinds: string[] = ['to']): Promise<Map<number, MailRecipientRow[]>> {
  const byMail = new Map<number, MailRecipientRow[]>();
  // SQLite caps bound parameters per statement: ask in chunks.
  for (let start = 0; start < mailIds.length; start += 900) {
    const chunk = mailIds.slice(start, start + 900);
    const rows = await db
      .selectFrom('mail_recipients')
      .selectAll()
      .where('mail_id', 'in', chunk)
      .where('kind', 'in', kinds)
      .orderBy('mail_id')
      .orderBy('position')
      .execute();
    for (const row of rows) {
      const list = byMail.get(row.mail_id);
      if (list) list.push(row);
      else byMail.set(row.mail_id, [row]);
    }
  }
  return byMail;
}

export function findMailContent(db: DbOrTrx, mailId: number) {
  return db.selectFrom('mail_contents').selectAll().where('mail_id', '=', mailId).executeTakeFirst();
}

export function findMailRow(db: DbOrTrx, id: number): Promise<MailRow | undefined> {
  return db.selectFrom('mails').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listEvents(db: DbOrTrx, mailId: number) {
  return db.selectFrom('mail_events').selectAll().where('mail_id', '=', mailId).orderBy('id').execute();
}

export interface NewRecipient {
  kind: string;
  name: string;
  address: string;
}

export interface NewMail {
  row: NewMailRow;
  recipients: NewRecipient[];
  content?:
    | {
        raw: Buffer | null;
        textBody: string | null;
        htmlBody: string | null;
        headersJson: string | null;
        envelopeFrom: string;
        sizeBytes: number;
      }
    | undefined;
}

/** Distinct envelope addresses: who the mail goes to (`mails.recipient_count`). */
export function envelopeRecipientCount(recipients: readonly NewRecipient[]): number {
  return new Set(recipients.filter((r) => r.kind === 'envelope').map((r) => r.address)).size;
}

/** Inserts mails with their recipients and content; returns the new ids in order. Counters and events are the caller's. */
export async function insertMails(db: DbOrTrx, mails: NewMail[]): Promise<number[]> {
  const ids: number[] = [];
  for (let start = 0; start < mails.length; start += 200) {
    const chunk = mails.slice(start, start + 200);
    const inserted = await db
      .insertInto('mails')
      .values(chunk.map((m) => ({ recipient_count: envelopeRecipientCount(m.recipients), ...m.row })))
      .returning('id')
      .execute();
    // RETURNING follows VALUES order on both engines for a single multi-row INSERT.
    ids.push(...inserted.map((r) => r.id));
    const recipients = chunk.flatMap((m, i) =>
      m.recipients.map((r, position) => ({
        mail_id: inserted[i]!.id,
        kind: r.kind,
        position,
        name: r.name,
        address: r.address,
        // Envelope rows are the ones delivered to: each starts pending (migrations/004-recipient-outcomes.ts).
        outcome: r.kind === 'envelope' ? 'pending' : null,
      })),
    );
    for (let r = 0; r < recipients.length; r += 500) {
      await db
        .insertInto('mail_recipients')
        .values(recipients.slice(r, r + 500))
        .execute();
    }
    const contents = chunk.flatMap((m, i) =>
      m.content
        ? [
            {
              mail_id: inserted[i]!.id,
              raw: m.content.raw,
              text_body: m.content.textBody,
              html_body: m.content.htmlBody,
              headers_json: m.content.headersJson,
              envelope_from: m.content.envelopeFrom,
              size_bytes: m.content.sizeBytes,
            },
          ]
        : [],
    );
    if (contents.length > 0) await db.insertInto('mail_contents').values(contents).execute();
  }
  return ids;
}

/** Up to `limit` mails in `statuses` last changed before `before`, oldest first: what retention deletes next. */
export function listStaleMails(
  db: DbOrTrx,
  statuses: readonly number[],
  before: number,
  limit: number,
): Promise<Array<{ id: number; status: number }>> {
  return db
    .selectFrom('mails')
    .select(['id', 'status'])
    .where('last_update_at', '<', before)
    .where('status', 'in', [...statuses])
    .orderBy('last_update_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

export type { Engine };

/** The rows of these mails, in no particular order; missing ids are left out. */
export function findMailRows(db: DbOrTrx, ids: readonly number[]): Promise<MailRow[]> {
  return db
    .selectFrom('mails')
    .selectAll()
    .where('id', 'in', [...ids])
    .execute();
}
