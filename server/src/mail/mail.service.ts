/**
 * The rules of the mail lifecycle an operator touches (PRODUCT.md §1): listing, dequeue, delete, requeue.
 * Every change is one conditional UPDATE/DELETE plus its event, audit entry and counter move, in one
 * transaction; a zero-row result becomes 404 (no such mail) or 409 (wrong state), never a silent success.
 * Rows never leave this module: callers get the contract's `Mail`.
 */
import {
  DELETABLE_STATUSES,
  MailStatus,
  REQUEUEABLE_STATUSES,
  STATUSES,
  type Mail,
  type MailDetail,
  type MailListMeta,
  type MailSort,
} from '@outbox/contract';
import { simpleParser } from 'mailparser';
import type { Clock } from '../clock.js';
import { badRequest, conflict, notFound, type AppError } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { MailRecipientRow, MailRow } from '../store/schema.js';
import { insertAuditEntries } from '../audit/audit.repository.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import * as repo from './mail.repository.js';

/**
 * A search too short for the trigram index (1–2 characters) is counted up to this many matches (then
 * `totalIsEstimate`): counting it means reading rows, and at 1M mails a cap of 10,000 cost ~55 ms.
 */
export const SEARCH_COUNT_CAP = 1_000;
/** Trigram indexes index 3-character pieces: a shorter search cannot use them. */
export const MIN_INDEXED_SEARCH = 3;
/**
 * Where the list changes plan. Tests lower them to walk every plan on a few dozen mails; nothing else
 * should change them.
 * - searchCandidateCap: a search whose trigram candidates number at most this many reads them by id and
 *   counts them exactly; beyond, the word is common enough that walking the sort's index fills a page
 *   soon, and the total is an estimate. Reading N candidates by id costs about what walking the sort
 *   index past 50/density rows does, which is where the two plans meet.
 * - rangeCountCap: a date range is counted exactly up to this many mails (index only); beyond, an estimate.
 * - fewRows: a date range holding at most this many mails is read through the date index and sorted.
 */
/** How many of a common search's newest candidates are checked to estimate its total. */
const ESTIMATE_SAMPLE = 500;
export const listTuning = { searchCandidateCap: 2_000, rangeCountCap: 10_000, fewRows: 5_000 };

export interface ListMailsInput {
  statuses?: number[] | undefined;
  q?: string | undefined;
  /** ISO 8601 instants: received at or after `receivedFrom`, before `receivedTo`. */
  receivedFrom?: string | undefined;
  receivedTo?: string | undefined;
  sort?: MailSort | undefined;
  order?: 'asc' | 'desc' | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface MailChange {
  /**
   * created and queued (a requeue) mean mails became due: a sleeping worker wakes for them. resync: the
   * change feed reconnected and may have missed changes, so whoever caches something reloads it.
   */
  type: 'created' | 'queued' | 'updated' | 'deleted' | 'resync';
  ids: number[];
}

export type MailChangeListener = (change: MailChange) => void;

const iso = (ms: number | null): string | null => (ms === null || ms === 0 ? null : new Date(ms).toISOString());

export function toMail(row: MailRow, recipients: MailRecipientRow[] = []): Mail {
  return {
    id: row.id,
    fromName: row.from_name,
    fromMail: row.from_mail,
    to: recipients.map((r) => ({ recipientName: r.name, recipientMail: r.address })),
    subject: row.subject,
    status: row.status,
    providerSentDate: iso(row.provider_sent_at),
    receivedDate: iso(row.received_at),
    lastUpdate: iso(row.last_update_at),
  };
}

/** The header block as name/value pairs, in order, unfolded. */
async function readHeaderLines(raw: Buffer): Promise<Array<{ name: string; value: string }>> {
  const end = raw.indexOf('\r\n\r\n');
  const parsed = await simpleParser(end >= 0 ? raw.subarray(0, end + 4) : raw, {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipImageLinks: true,
  });
  return parsed.headerLines.map((line) => {
    const colon = line.line.indexOf(':');
    return {
      name: line.line.slice(0, colon),
      value: line.line
        .slice(colon + 1)
        .replace(/\r?\n[ \t]+/g, ' ')
        .trim(),
    };
  });
}

export function statusName(code: number): string {
  return STATUSES[code]?.name ?? `status ${code}`;
}

export function createMailService({ store, clock }: { store: Store; clock: Clock }) {
  const { db } = store;

  /** Through the store's change feed, so other instances on the same PostgreSQL hear it too. */
  function notify(change: MailChange): void {
    store.changes.publish(change);
  }

  async function withRecipients(rows: MailRow[]): Promise<Mail[]> {
    const recipients = await repo.listRecipients(
      db,
      rows.map((r) => r.id),
    );
    return rows.map((row) => toMail(row, recipients.get(row.id)));
  }

  async function listMails(input: ListMailsInput): Promise<{ data: Mail[]; meta: MailListMeta }> {
    const sort = input.sort ?? 'receivedDate';
    const order = input.order ?? 'desc';
    const cursor = input.cursor ? decodeCursor(input.cursor, sort, order) : undefined;
    const statuses = input.statuses && input.statuses.length > 0 ? [...new Set(input.statuses)] : undefined;
    const search = input.q?.trim().toLowerCase() || undefined;
    const receivedFrom = input.receivedFrom !== undefined ? Date.parse(input.receivedFrom) : undefined;
    const receivedTo = input.receivedTo !== undefined ? Date.parse(input.receivedTo) : undefined;
    if (receivedFrom !== undefined && receivedTo !== undefined && receivedFrom >= receivedTo) {
      throw badRequest('invalid_date_range', 'query.receivedTo must be later than query.receivedFrom');
    }
    const hasRange = receivedFrom !== undefined || receivedTo !== undefined;
    const filter: repo.MailFilter = { statuses, search, receivedFrom, receivedTo };

    // A search of 3+ characters asks the trigram index for its newest candidates first. Few: the page and
    // the count read just those, by id. Many: the word is common, so walking the sort's index meets a
    // page of matches soon, and the candidates are a sample to estimate the total from.
    const [counts, found] = await Promise.all([
      repo.getStatusCounts(db),
      search !== undefined && Array.from(search).length >= MIN_INDEXED_SEARCH
        ? repo.findSearchCandidates(db, store.engine, { ...filter, search }, listTuning.searchCandidateCap)
        : undefined,
    ]);
    let statusTotal = 0;
    for (const [status, count] of counts) if (!statuses || statuses.includes(status)) statusTotal += count;
    const candidateIds = found?.kind === 'few' ? found.ids : undefined;
    // A date range is counted up to a cap (its index is covering); a small one is also read through it.
    const rangeCount =
      hasRange && candidateIds === undefined
        ? await repo.countMailRowsUpTo(db, { statuses, receivedFrom, receivedTo }, listTuning.rangeCountCap + 1)
        : undefined;
    const fewRows = rangeCount !== undefined && rangeCount <= listTuning.fewRows && sort !== 'receivedDate';

    // What an estimate may not exceed: the status total, or a date range's exact count when it has one.
    const upperBound = () =>
      rangeCount !== undefined && rangeCount <= listTuning.rangeCountCap ? Math.min(rangeCount, statusTotal) : statusTotal;
    const countTotal = async (): Promise<{ total: number; totalIsEstimate: boolean }> => {
      let total: number;
      let totalIsEstimate = false;
      if (candidateIds) {
        total = await repo.countMailRowsUpTo(db, { ...filter, candidateIds }, candidateIds.length + 1);
      } else if (found?.kind === 'many') {
        // The share of the newest 500 candidates that match (LIKE and every filter), over the ids they
        // span, extrapolated to the whole id range (each candidate checked is a row read, so not all
        // 2,001). Bounded by what is known for sure.
        const newest = found.newest.slice(0, ESTIMATE_SAMPLE);
        const [matchedInSample, bounds] = await Promise.all([
          repo.countMailRowsUpTo(db, { ...filter, candidateIds: newest }, newest.length + 1),
          repo.getIdBounds(db),
        ]);
        const extrapolated = bounds
          ? Math.round((matchedInSample * (bounds.max - bounds.min + 1)) / (bounds.max - Math.min(...newest) + 1))
          : 0;
        total = Math.min(Math.max(extrapolated, matchedInSample), upperBound());
        totalIsEstimate = true;
      } else if (found?.kind === 'estimated') {
        total = Math.min(found.rows, upperBound());
        totalIsEstimate = true;
      } else if (search) {
        // 1–2 characters: no trigram to look up; the page walks the sort's index and the count reads rows.
        total = await repo.countMailRowsUpTo(db, filter, SEARCH_COUNT_CAP + 1);
        totalIsEstimate = total > SEARCH_COUNT_CAP;
        if (totalIsEstimate) total = SEARCH_COUNT_CAP;
      } else if (rangeCount !== undefined) {
        totalIsEstimate = rangeCount > listTuning.rangeCountCap;
        total = Math.min(rangeCount, listTuning.rangeCountCap);
      } else {
        total = statusTotal;
      }
      return { total, totalIsEstimate };
    };

    const [{ rows, hasMore }, { total, totalIsEstimate }] = await Promise.all([
      repo.listMailRows(db, store.engine, { ...filter, candidateIds, fewRows, sort, order, limit: input.limit, cursor }),
      countTotal(),
    ]);

    const cursorAt = (row: MailRow | undefined, direction: 'next' | 'prev') =>
      row ? encodeCursor({ sort, order, value: repo.sortValueOf(row, sort), id: row.id, direction }) : null;
    const isBackwards = cursor?.direction === 'prev';
    const fromFarEnd = isBackwards && cursor.id === null;
    // Forwards, a page after a cursor always has one before it; backwards, the page we came from follows
    // (except on the last page, read from the far end: nothing follows it).
    const nextCursor = fromFarEnd ? null : isBackwards || hasMore ? cursorAt(rows.at(-1), 'next') : null;
    const prevCursor = (isBackwards ? hasMore : cursor !== undefined) ? cursorAt(rows[0], 'prev') : null;
    // The last page is the far end read backwards; offered whenever a page follows this one.
    const lastCursor =
      input.limit !== undefined && nextCursor !== null ? encodeCursor({ sort, order, value: null, id: null, direction: 'prev' }) : null;

    return {
      data: await withRecipients(rows),
      meta: {
        total,
        totalIsEstimate,
        nextCursor,
        prevCursor,
        lastCursor,
        counts: Object.fromEntries(STATUSES.map((s) => [String(s.code), counts.get(s.code) ?? 0])),
      },
    };
  }

  /** The row, its message (headers and bodies parsed from the stored bytes) and its event log. */
  async function getMailDetail(id: number): Promise<MailDetail> {
    const row = await repo.findMailRow(db, id);
    if (!row) throw mailNotFound(id);
    const [recipients, content, events] = await Promise.all([
      repo.listRecipients(db, [id], ['to', 'cc', 'bcc', 'envelope']),
      repo.findMailContent(db, id),
      repo.listEvents(db, id),
    ]);
    const all = recipients.get(id) ?? [];
    const ofKind = (kind: string) => all.filter((r) => r.kind === kind);
    const headers = content?.raw ? await readHeaderLines(content.raw) : [];
    return {
      ...toMail(row, ofKind('to')),
      messageId: row.message_id,
      cc: ofKind('cc').map((r) => ({ recipientName: r.name, recipientMail: r.address })),
      bcc: ofKind('bcc').map((r) => ({ recipientName: r.name, recipientMail: r.address })),
      envelopeFrom: content?.envelope_from ?? null,
      envelopeTo: ofKind('envelope').map((r) => r.address),
      attempts: row.attempts,
      nextAttemptAt: row.status === MailStatus.Queued ? iso(row.next_attempt_at) : null,
      providerReply: row.provider_reply,
      leaseOwner: row.lease_owner,
      leaseExpiresAt: iso(row.lease_expires_at),
      sizeBytes: content?.size_bytes ?? null,
      headers,
      text: content?.text_body ?? null,
      html: content?.html_body ?? null,
      events: events.map((e) => ({
        at: new Date(e.at).toISOString(),
        actor: e.actor,
        type: e.type,
        fromStatus: e.from_status,
        toStatus: e.to_status,
        detail: e.detail ? (JSON.parse(e.detail) as Record<string, unknown>) : null,
      })),
    };
  }

  /** The stored RFC 5322 bytes, as they go to the provider. */
  async function getRawMessage(id: number): Promise<Buffer> {
    const row = await repo.findMailRow(db, id);
    if (!row) throw mailNotFound(id);
    const content = await repo.findMailContent(db, id);
    if (!content?.raw) throw notFound('message_not_stored', `Mail ${id} has no stored message (demo data has none).`);
    return content.raw;
  }

  function mailNotFound(id: number): AppError {
    return notFound('mail_not_found', `No mail has id ${id}.`);
  }

  /** Explains why a conditional change matched no row: the mail is gone (404) or in another state (409). */
  async function explainMiss(id: number, action: string, allowed: readonly number[]): Promise<AppError> {
    const row = await repo.findMailRow(db, id);
    if (!row) return mailNotFound(id);
    const allowedNames = allowed.map(statusName).join(', ');
    return conflict('invalid_status', `Mail ${id} is ${statusName(row.status)}; only ${allowedNames} mails can be ${action}.`);
  }

  async function dequeueMail(id: number, actor: string): Promise<Mail> {
    const now = clock.now();
    const row = await db.transaction().execute(async (trx) => {
      const updated = await repo.dequeueMailRow(trx, id, now);
      if (!updated) return undefined;
      await repo.insertEvents(trx, [
        { mailId: id, at: now, actor, type: 'dequeued', fromStatus: MailStatus.Queued, toStatus: MailStatus.Dequeued },
      ]);
      await insertAuditEntries(trx, [
        { at: now, actor, action: 'mail.dequeue', target: `mail:${id}`, before: { status: 'Queued' }, after: { status: 'Dequeued' } },
      ]);
      await repo.adjustStatusCounts(
        trx,
        new Map([
          [MailStatus.Queued, -1],
          [MailStatus.Dequeued, 1],
        ]),
      );
      return updated;
    });
    if (!row) throw await explainMiss(id, 'dequeued', [MailStatus.Queued]);
    notify({ type: 'updated', ids: [id] });
    const [mail] = await withRecipients([row]);
    return mail!;
  }

  async function requeueMail(id: number, actor: string): Promise<Mail> {
    const now = clock.now();
    const row = await db.transaction().execute(async (trx) => {
      const before = await repo.findMailRow(trx, id);
      if (!before || !REQUEUEABLE_STATUSES.includes(before.status as never)) return undefined;
      const updated = await repo.requeueMailRow(trx, id, now, [before.status]);
      if (!updated) return undefined;
      await repo.insertEvents(trx, [
        { mailId: id, at: now, actor, type: 'requeued', fromStatus: before.status, toStatus: MailStatus.Queued },
      ]);
      await insertAuditEntries(trx, [
        {
          at: now,
          actor,
          action: 'mail.requeue',
          target: `mail:${id}`,
          before: { status: statusName(before.status) },
          after: { status: 'Queued' },
        },
      ]);
      await repo.adjustStatusCounts(
        trx,
        new Map([
          [before.status, -1],
          [MailStatus.Queued, 1],
        ]),
      );
      return updated;
    });
    if (!row) throw await explainMiss(id, 'requeued', REQUEUEABLE_STATUSES);
    notify({ type: 'queued', ids: [id] });
    const [mail] = await withRecipients([row]);
    return mail!;
  }

  async function deleteMail(id: number, actor: string): Promise<{ id: number }> {
    const now = clock.now();
    const deleted = await db.transaction().execute(async (trx) => {
      const row = await repo.deleteMailRow(trx, id, DELETABLE_STATUSES);
      if (!row) return undefined;
      // The mail's own event log goes with it; the audit log keeps what was deleted.
      await insertAuditEntries(trx, [
        {
          at: now,
          actor,
          action: 'mail.delete',
          target: `mail:${id}`,
          before: { status: statusName(row.status), subject: row.subject, fromMail: row.from_mail, messageId: row.message_id },
          after: null,
        },
      ]);
      await repo.adjustStatusCounts(trx, new Map([[row.status, -1]]));
      return row;
    });
    if (!deleted) throw await explainMiss(id, 'deleted', DELETABLE_STATUSES);
    notify({ type: 'deleted', ids: [id] });
    return { id };
  }

  /**
   * Retention (PRODUCT.md §4, RETENTION_DAYS): finished and failed mails unchanged for longer than that are
   * deleted, in batches so that no transaction holds the store for long. Queued and Processing mails are
   * never purged. The audit log records each batch.
   */
  async function purgeFinishedMails(olderThanDays: number, actor: string): Promise<number> {
    const before = clock.now() - olderThanDays * 86_400_000;
    let purged = 0;
    for (;;) {
      const rows = await db.transaction().execute(async (trx) => {
        const deleted = await repo.deleteStaleMails(trx, DELETABLE_STATUSES, before, 1000);
        if (deleted.length === 0) return deleted;
        await insertAuditEntries(trx, [
          { at: clock.now(), actor, action: 'mail.purge', target: `${deleted.length} mails`, before: { olderThanDays }, after: null },
        ]);
        const deltas = new Map<number, number>();
        for (const row of deleted) deltas.set(row.status, (deltas.get(row.status) ?? 0) - 1);
        await repo.adjustStatusCounts(trx, deltas);
        return deleted;
      });
      if (rows.length === 0) break;
      purged += rows.length;
      notify({ type: 'deleted', ids: rows.map((r) => r.id) });
    }
    return purged;
  }

  /** Mails per status and the acceptance time of the oldest Queued one: for /metrics. */
  async function queueHealth(): Promise<{ counts: Record<number, number>; oldestQueuedReceivedAt: number | undefined }> {
    const [counts, oldest] = await Promise.all([repo.getStatusCounts(db), repo.findOldestReceivedAt(db, MailStatus.Queued)]);
    return { counts: Object.fromEntries(counts), oldestQueuedReceivedAt: oldest };
  }

  return {
    queueHealth,
    purgeFinishedMails,
    listMails,
    getMailDetail,
    getRawMessage,
    dequeueMail,
    requeueMail,
    deleteMail,
    notify,
    onChange(listener: MailChangeListener): () => void {
      // The feed carries only what notify() published, here or in another instance of this same code.
      return store.changes.subscribe(listener as (change: { type: string; ids: number[] }) => void);
    },
  };
}

export type MailService = ReturnType<typeof createMailService>;
