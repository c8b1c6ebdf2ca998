/**
 * The SQL of bounce handling (docs/bounces.md): the return path's secret, the kept reports, and the per-recipient
 * marks a report leaves on its mail. Status moves go through mail/transition.repository.ts, not here.
 */
import { sql } from 'kysely';
import type { DbOrTrx } from '../store/connection.js';
import type { BounceReportRow } from '../store/schema.js';

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

export async function insertBounceReport(db: DbOrTrx, report: NewBounceReport): Promise<number> {
  const row = await db
    .insertInto('bounce_reports')
    .values({
      received_at: report.receivedAt,
      envelope_from: report.envelopeFrom,
      envelope_to: report.envelopeTo,
      kind: report.kind,
      mail_id: report.mailId,
      matched_by: report.matchedBy,
      summary: report.summary,
      raw: report.raw,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
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

/** The mail a Message-ID names (the newest, should an application have reused one); migration 010 indexes it. */
export async function findMailIdByMessageId(db: DbOrTrx, messageId: string): Promise<number | undefined> {
  const row = await db
    .selectFrom('mails')
    .select('id')
    .where('message_id', '=', messageId)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? Number(row.id) : undefined;
}

export interface BouncedMail {
  id: number;
  status: number;
  apiKeyId: number | null;
  recipients: Array<{ address: string; outcome: string | null }>;
}

export async function findBouncedMail(db: DbOrTrx, mailId: number): Promise<BouncedMail | undefined> {
  const mail = await db.selectFrom('mails').select(['id', 'status', 'api_key_id']).where('id', '=', mailId).executeTakeFirst();
  if (!mail) return undefined;
  const recipients = await db
    .selectFrom('mail_recipients')
    .select(['address', 'outcome'])
    .where('mail_id', '=', mailId)
    .where('kind', '=', 'envelope')
    .orderBy('position')
    .execute();
  return { id: Number(mail.id), status: mail.status, apiKeyId: mail.api_key_id, recipients };
}

/** Sets the outcome and reply of some of a mail's envelope recipients (addresses as stored). */
export async function markRecipients(
  db: DbOrTrx,
  mailId: number,
  marks: ReadonlyArray<{ address: string; outcome: string; reply: string }>,
  at: number,
): Promise<void> {
  for (const mark of marks) {
    await db
      .updateTable('mail_recipients')
      .set({ outcome: mark.outcome, reply: mark.reply, updated_at: at })
      .where('mail_id', '=', mailId)
      .where('kind', '=', 'envelope')
      .where('address', '=', mark.address)
      .execute();
  }
}

/** The reports matched to one mail, oldest first, without their bytes. */
export async function listMailBounceReports(db: DbOrTrx, mailId: number): Promise<BounceReportSummaryRow[]> {
  const rows = await db
    .selectFrom('bounce_reports')
    .select([...summaryColumns, sql<number>`length(raw)`.as('size')])
    .where('mail_id', '=', mailId)
    .orderBy('received_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    ...row,
    id: Number(row.id),
    mail_id: row.mail_id === null ? null : Number(row.mail_id),
    size: Number(row.size),
  }));
}
