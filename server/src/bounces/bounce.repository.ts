/**
 * The SQL of bounce handling (docs/bounces.md): the return path's secret, the kept reports, and the per-recipient
 * marks a report leaves on its mail. Status moves go through mail/write/, not here.
 */
import { sql } from 'kysely';
import { withLeases } from '../mail/leases.js';
import type { DbOrTrx } from '../store/connection.js';
import type { BounceReportRow, RecipientOutcome } from '../store/schema.js';

/**
 * The named secret, created on first use. Race-free across instances: every instance inserts its own candidate
 * and ignores a conflict, then all read the one row that won.
 */
export async function ensureServerSecret(db: DbOrTrx, name: string, candidate: string, at: number): Promise<string> {
  await db
    .insertInto('server_secrets')
    .values({ name, value: candidate, created_at: at })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

export interface NewBounceReport {
  receivedAt: number;
  envelopeFrom: string;
  envelopeTo: string;
  kind: string;
  mailId: number | null;
  matchedBy: string | null;
  summary: string;
  raw: Buffer;
}

/**
 * Keeps the reports in one INSERT and returns their ids in the order given. The ids of one statement are drawn
 * in its row order (SQLite's rowid, PostgreSQL's identity sequence), so sorted they line up with the rows even
 * when another instance inserts meanwhile; RETURNING itself promises no order.
 */
export async function insertBounceReports(db: DbOrTrx, reports: readonly NewBounceReport[]): Promise<number[]> {
  if (reports.length === 0) return [];
  const rows = await db
    .insertInto('bounce_reports')
    .values(
      reports.map((report) => ({
        received_at: report.receivedAt,
        envelope_from: report.envelopeFrom,
        envelope_to: report.envelopeTo,
        kind: report.kind,
        mail_id: report.mailId,
        matched_by: report.matchedBy,
        summary: report.summary,
        raw: report.raw,
      })),
    )
    .returning('id')
    .execute();
  return rows.map((row) => Number(row.id)).sort((x, y) => x - y);
}

export type BounceReportSummaryRow = Omit<BounceReportRow, 'raw'> & { size: number };

const summaryColumns = ['id', 'received_at', 'envelope_from', 'envelope_to', 'kind', 'mail_id', 'matched_by', 'summary'] as const;

/** Newest first, keyset on (received_at, id); `matched` filters on whether a mail was found. */
export async function listBounceReports(
  db: DbOrTrx,
  options: { matched?: boolean | undefined; limit: number; before?: { receivedAt: number; id: number } | undefined },
): Promise<BounceReportSummaryRow[]> {
  let query = db
    .selectFrom('bounce_reports')
    .select([...summaryColumns, sql<number>`length(raw)`.as('size')])
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit);
  if (options.matched !== undefined) query = query.where('mail_id', options.matched ? 'is not' : 'is', null);
  const before = options.before;
  if (before) {
    query = query.where((eb) =>
      eb.or([eb('received_at', '<', before.receivedAt), eb.and([eb('received_at', '=', before.receivedAt), eb('id', '<', before.id)])]),
    );
  }
  const rows = await query.execute();
  return rows.map((row) => ({
    ...row,
    id: Number(row.id),
    mail_id: row.mail_id === null ? null : Number(row.mail_id),
    size: Number(row.size),
  }));
}

export async function findBounceReport(db: DbOrTrx, id: number): Promise<BounceReportRow | undefined> {
  const row = await db.selectFrom('bounce_reports').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? { ...row, id: Number(row.id), mail_id: row.mail_id === null ? null : Number(row.mail_id) } : undefined;
}

/** The mail each Message-ID names (the newest, should an application have reused one); migration 010 indexes it. */
export async function findMailIdsByMessageIds(db: DbOrTrx, messageIds: readonly string[]): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const wanted = [...new Set(messageIds)];
  if (wanted.length === 0) return found;
  const rows = await db
    .selectFrom('mails')
    .select(['message_id', (eb) => eb.fn.max('id').as('id')])
    .where('message_id', 'in', wanted)
    .groupBy('message_id')
    .execute();
  for (const row of rows) found.set(row.message_id, Number(row.id));
  return found;
}

export interface BouncedMail {
  id: number;
  status: number;
  apiKeyId: number | null;
  recipients: Array<{ address: string; outcome: RecipientOutcome | null }>;
}

/** The mails with these ids and their envelope recipients (in stored order): two queries for a whole group. */
export async function findBouncedMails(db: DbOrTrx, mailIds: readonly number[]): Promise<Map<number, BouncedMail>> {
  const found = new Map<number, BouncedMail>();
  const wanted = [...new Set(mailIds)];
  if (wanted.length === 0) return found;
  // As they show: a leased mail is Processing (mail/leases.ts), the status its move starts from.
  const mails = await withLeases(
    db,
    await db.selectFrom('mails').select(['id', 'status', 'api_key_id', 'last_update_at', 'attempts']).where('id', 'in', wanted).execute(),
  );
  if (mails.length === 0) return found;
  for (const mail of mails)
    found.set(Number(mail.id), { id: Number(mail.id), status: mail.status, apiKeyId: mail.api_key_id, recipients: [] });
  const recipients = await db
    .selectFrom('mail_recipients')
    .select(['mail_id', 'address', 'outcome'])
    .where('mail_id', 'in', [...found.keys()])
    .where('kind', '=', 'envelope')
    .orderBy('mail_id')
    .orderBy('position')
    .execute();
  for (const row of recipients) found.get(Number(row.mail_id))?.recipients.push({ address: row.address, outcome: row.outcome });
  return found;
}

/**
 * Sets the outcome and reply of envelope recipients of several mails (addresses as stored) in one UPDATE joined
 * to a VALUES list, as mail/write/apply.ts moves mails; the casts give PostgreSQL the columns' types.
 */
export async function markRecipients(
  db: DbOrTrx,
  marks: ReadonlyArray<{ mailId: number; address: string; outcome: string; reply: string }>,
  at: number,
): Promise<void> {
  for (let start = 0; start < marks.length; start += 500) {
    const values = marks
      .slice(start, start + 500)
      .map(
        (mark) =>
          sql`(cast(${mark.mailId} as bigint), cast(${mark.address} as text), cast(${mark.outcome} as text), cast(${mark.reply} as text))`,
      );
    await sql`
      with v (mail_id, address, outcome, reply) as (values ${sql.join(values)})
      update mail_recipients set outcome = v.outcome, reply = v.reply, updated_at = ${at}
      from v
      where mail_recipients.mail_id = v.mail_id and mail_recipients.kind = 'envelope' and mail_recipients.address = v.address`.execute(db);
  }
}

/** How many reports each of these mails has kept (migration 021's index on mail_id). */
export async function countMailReports(db: DbOrTrx, mailIds: readonly number[]): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  const wanted = [...new Set(mailIds)];
  if (wanted.length === 0) return counts;
  const rows = await db
    .selectFrom('bounce_reports')
    .select(['mail_id', (eb) => eb.fn.countAll().as('n')])
    .where('mail_id', 'in', wanted)
    .groupBy('mail_id')
    .execute();
  for (const row of rows) counts.set(Number(row.mail_id), Number(row.n));
  return counts;
}

/**
 * Keeps the newest `keep` unmatched reports and deletes the older ones: the row `keep` places below the newest is
 * found on the (mail_id, received_at, id) index, and everything at or before it goes.
 */
export async function trimUnmatchedReports(db: DbOrTrx, keep: number): Promise<number> {
  const edge = await db
    .selectFrom('bounce_reports')
    .select(['received_at', 'id'])
    .where('mail_id', 'is', null)
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .offset(keep)
    .executeTakeFirst();
  if (!edge) return 0;
  const deleted = await db
    .deleteFrom('bounce_reports')
    .where('mail_id', 'is', null)
    .where((eb) =>
      eb.or([eb('received_at', '<', edge.received_at), eb.and([eb('received_at', '=', edge.received_at), eb('id', '<=', edge.id)])]),
    )
    .executeTakeFirst();
  return Number(deleted.numDeletedRows);
}

/** Deletes up to `batch` reports received before `before`, matched or not; answers how many went. */
export async function deleteBounceReportsBefore(db: DbOrTrx, before: number, batch: number): Promise<number> {
  const deleted = await db
    .deleteFrom('bounce_reports')
    .where(
      'id',
      'in',
      db.selectFrom('bounce_reports').select('id').where('received_at', '<', before).orderBy('received_at').orderBy('id').limit(batch),
    )
    .executeTakeFirst();
  return Number(deleted.numDeletedRows);
}

/** The reports matched to one mail, oldest first, without their bytes; keyset paged on (received_at, id). */
export async function listMailBounceReports(
  db: DbOrTrx,
  mailId: number,
  page: { limit: number; after?: { receivedAt: number; id: number } | undefined },
): Promise<BounceReportSummaryRow[]> {
  let query = db
    .selectFrom('bounce_reports')
    .select([...summaryColumns, sql<number>`length(raw)`.as('size')])
    .where('mail_id', '=', mailId)
    .orderBy('received_at')
    .orderBy('id')
    .limit(page.limit);
  const after = page.after;
  if (after) {
    query = query.where((eb) =>
      eb.or([eb('received_at', '>', after.receivedAt), eb.and([eb('received_at', '=', after.receivedAt), eb('id', '>', after.id)])]),
    );
  }
  const rows = await query.execute();
  return rows.map((row) => ({
    ...row,
    id: Number(row.id),
    mail_id: row.mail_id === null ? null : Number(row.mail_id),
    size: Number(row.size),
  }));
}
