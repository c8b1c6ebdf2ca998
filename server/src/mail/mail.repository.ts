/**
 * The mail SQL other than the list's page reads (list/list.repository.ts): the per-status counters,
 * recipients, contents and the event log, and what inserting a mail needs. Status changes, their events and
 * counter moves are the writer's (`write/`). Functions take `db | trx` first.
 */
import { sql } from 'kysely';
import { MailStatus } from '@outbox/contract';
import type { DbOrTrx, Engine } from '../store/connection.js';
import { LEASED_IDS, statusTerm, withLeases, type MailView } from './leases.js';
import type { MailRecipientRow, NewMailRow } from '../store/schema.js';

/** The highest mail id so far (0 when there is none): where a bulk filter action stops. */
export async function findMaxMailId(db: DbOrTrx): Promise<number> {
  const row = await db
    .selectFrom('mails')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}

/**
 * Exact mails per status as they show, from the counters kept with every change and, in the same statement
 * (one snapshot), the leases: the counters count a leased mail among the stored Queued ones, and it shows
 * Processing (mail/leases.ts).
 */
export async function getStatusCounts(db: DbOrTrx): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('status_counts')
    .select(['status', 'count', sql<number | string>`(${LEASED_COUNT})`.as('leased')])
    .execute();
  const counts = new Map(rows.map((r) => [r.status, Number(r.count)]));
  const leased = Number(rows[0]?.leased ?? 0);
  counts.set(MailStatus.Queued, (counts.get(MailStatus.Queued) ?? 0) - leased);
  counts.set(MailStatus.Processing, (counts.get(MailStatus.Processing) ?? 0) + leased);
  return counts;
}

const LEASED_COUNT = sql`select count(*) from (${LEASED_IDS}) leased`;

/** The earliest acceptance among mails in `status` (an index seek on (status, received_at, id)). */
/**
 * The acceptance time of the oldest mail in `status`. A scheduled send whose instant is still ahead of `now` waits for
 * its time, not for a worker (docs/api.md#scheduled-sends), and is passed over: a mail scheduled a week ahead would
 * otherwise read as a queue stuck for days.
 */
export async function findOldestReceivedAt(db: DbOrTrx, status: number, now: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('mails')
    .select('received_at')
    .where(statusTerm([status]))
    .where((eb) => eb.or([eb('send_at', 'is', null), eb('send_at', '<=', now)]))
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

/** A mail's row as it shows (its lease applied: mail/leases.ts). */
export async function findMailRow(db: DbOrTrx, id: number): Promise<MailView | undefined> {
  const row = await db.selectFrom('mails').selectAll().where('id', '=', id).executeTakeFirst();
  return row && (await withLeases(db, [row]))[0];
}

/** A mail's events, oldest first, one keyset page (after `afterId`) on the (mail_id, id) index. */
export function listEvents(db: DbOrTrx, mailId: number, page: { limit: number; afterId?: number | undefined }) {
  let query = db.selectFrom('mail_events').selectAll().where('mail_id', '=', mailId);
  if (page.afterId !== undefined) query = query.where('id', '>', page.afterId);
  return query.orderBy('id').limit(page.limit).execute();
}

export interface NewRecipient {
  kind: string;
  name: string;
  address: string;
}

/** A mail to insert (`insertMails` in write/create.ts, which sets its status from its creation). */
export interface NewMail {
  /** `search_text` and `first_to_mail` are derived from the row and its recipients by insertMails; the status from its creation. */
  row: Omit<NewMailRow, 'status' | 'event_seq' | 'search_text' | 'first_to_mail'>;
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

/**
 * What the list's search looks in, lower-cased: the sender's name and address, each To/Cc/Bcc recipient's
 * name and address (not the envelope's: Bcc is there too, and it is already listed), and the subject.
 */
export function searchTextOf(row: Pick<NewMailRow, 'from_name' | 'from_mail' | 'subject'>, recipients: readonly NewRecipient[]): string {
  const named = recipients.filter((r) => r.kind !== 'envelope').flatMap((r) => [r.name, r.address]);
  return [row.from_name, row.from_mail, ...named, row.subject].join(' ').toLowerCase();
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

/** The rows of these mails as they show (leases applied), in no particular order; missing ids are left out. */
export async function findMailRows(db: DbOrTrx, ids: readonly number[]): Promise<MailView[]> {
  const rows = await db
    .selectFrom('mails')
    .selectAll()
    .where('id', 'in', [...ids])
    .execute();
  return withLeases(db, rows);
}
