/**
 * The rules of the mail lifecycle an operator touches (PRODUCT.md §1): listing, dequeue, delete, requeue.
 * Every change is one transition (`applyTransitions`: conditional UPDATE/DELETE, event, counter move)
 * plus its audit entry, in one transaction; a miss becomes 404 (no such mail) or 409 (wrong state), never
 * a silent success.
 * Rows never leave this module: callers get the contract's `Mail`.
 */
import {
  DELETABLE_STATUSES,
  MailStatus,
  STATUSES,
  isStatusCode,
  type Mail,
  type MailDetail,
  type MailListMeta,
  type MailSort,
  type MailStatusCode,
} from '@outbox/contract';
import type { Clock } from '../clock.js';
import { conflict, notFound, type AppError } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { insertAuditEntries, type AuditEntry } from '../audit/audit.repository.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { deleteTransition, dequeueTransition, requeueTransition } from './lifecycle.js';
import { statusName, toMail, toMailDetail } from './mail-mapping.js';
import * as repo from './mail.repository.js';
import { applyTransitions, type Transition } from './transition.repository.js';

export { statusName, toMail } from './mail-mapping.js';

/**
 * A text search is counted up to this many matches (then `totalIsEstimate`): counting means reading rows,
 * and at 1M mails a cap of 10,000 cost ~55 ms for a common word, more than the page itself.
 */
export const SEARCH_COUNT_CAP = 1_000;

export interface ListMailsInput {
  statuses?: number[] | undefined;
  q?: string | undefined;
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

    const [{ rows, hasMore }, counts] = await Promise.all([
      repo.listMailRows(db, { statuses, search, sort, order, limit: input.limit, cursor }),
      repo.getStatusCounts(db),
    ]);

    let total = 0;
    let totalIsEstimate = false;
    if (search) {
      total = await repo.countMailRowsUpTo(db, { statuses, search }, SEARCH_COUNT_CAP + 1);
      totalIsEstimate = total > SEARCH_COUNT_CAP;
      if (totalIsEstimate) total = SEARCH_COUNT_CAP;
    } else {
      for (const [status, count] of counts) if (!statuses || statuses.includes(status)) total += count;
    }

    const cursorAt = (row: MailRow | undefined, direction: 'next' | 'prev') =>
      row ? encodeCursor({ sort, order, value: repo.sortValueOf(row, sort), id: row.id, direction }) : null;
    const isBackwards = cursor?.direction === 'prev';
    // Forwards, a page after a cursor always has one before it; backwards, the page we came from follows.
    const nextCursor = isBackwards || hasMore ? cursorAt(rows.at(-1), 'next') : null;
    const prevCursor = (isBackwards ? hasMore : cursor !== undefined) ? cursorAt(rows[0], 'prev') : null;

    return {
      data: await withRecipients(rows),
      meta: {
        total,
        totalIsEstimate,
        nextCursor,
        prevCursor,
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
    return toMailDetail(row, recipients.get(id) ?? [], content, events);
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

  /**
   * One operator action on one mail: the transition and its audit entry in one transaction. A miss
   * becomes 404 (no such mail) or 409 (another status), explained after the transaction.
   */
  async function act(id: number, transition: Transition, audit: (row: MailRow) => AuditEntry): Promise<MailRow | undefined> {
    return db.transaction().execute(async (trx) => {
      const { moved, rows } = await applyTransitions(trx, [transition], { returnRows: true });
      const row = rows.get(id);
      if (moved.length === 0 || !row) return undefined;
      await insertAuditEntries(trx, [audit(row)]);
      return row;
    });
  }

  async function dequeueMail(id: number, actor: string): Promise<Mail> {
    const at = clock.now();
    const transition = dequeueTransition(id, at, actor);
    const row = await act(id, transition, () => ({
      at,
      actor,
      action: 'mail.dequeue',
      target: `mail:${id}`,
      before: { status: 'Queued' },
      after: { status: 'Dequeued' },
    }));
    if (!row) throw await explainMiss(id, 'dequeued', transition.from);
    notify({ type: 'updated', ids: [id] });
    const [mail] = await withRecipients([row]);
    return mail!;
  }

  async function requeueMail(id: number, actor: string): Promise<Mail> {
    const at = clock.now();
    let before: number | undefined;
    const transition = requeueTransition(id, at, actor);
    const row = await db.transaction().execute(async (trx) => {
      const { moved, rows } = await applyTransitions(trx, [transition], { returnRows: true });
      before = moved[0]?.from ?? undefined;
      const updated = rows.get(id);
      if (before === undefined || !updated) return undefined;
      await insertAuditEntries(trx, [
        { at, actor, action: 'mail.requeue', target: `mail:${id}`, before: { status: statusName(before) }, after: { status: 'Queued' } },
      ]);
      return updated;
    });
    if (!row) throw await explainMiss(id, 'requeued', transition.from);
    notify({ type: 'queued', ids: [id] });
    const [mail] = await withRecipients([row]);
    return mail!;
  }

  async function deleteMail(id: number, actor: string): Promise<{ id: number }> {
    const at = clock.now();
    const transition = deleteTransition(id);
    // The mail's own event log goes with it; the audit log keeps what was deleted.
    const deleted = await act(id, transition, (row) => ({
      at,
      actor,
      action: 'mail.delete',
      target: `mail:${id}`,
      before: { status: statusName(row.status), subject: row.subject, fromMail: row.from_mail, messageId: row.message_id },
      after: null,
    }));
    if (!deleted) throw await explainMiss(id, 'deleted', transition.from);
    notify({ type: 'deleted', ids: [id] });
    return { id };
  }

  /**
   * Retention (RETENTION_DAYS): finished and failed mails unchanged for longer than that are deleted, in
   * batches so that no transaction holds the store for long. Queued and Processing mails are never purged.
   * The audit log records each batch.
   */
  async function purgeFinishedMails(olderThanDays: number, actor: string): Promise<number> {
    const before = clock.now() - olderThanDays * 86_400_000;
    let purged = 0;
    for (;;) {
      const ids = await db.transaction().execute(async (trx) => {
        const stale = await repo.listStaleMails(trx, DELETABLE_STATUSES, before, 1000);
        if (stale.length === 0) return [];
        const { moved } = await applyTransitions(
          trx,
          stale.filter((row) => isStatusCode(row.status)).map((row) => deleteTransition(row.id, [row.status as MailStatusCode])),
        );
        await insertAuditEntries(trx, [
          { at: clock.now(), actor, action: 'mail.purge', target: `${moved.length} mails`, before: { olderThanDays }, after: null },
        ]);
        return moved.map((m) => m.id);
      });
      if (ids.length === 0) break;
      purged += ids.length;
      notify({ type: 'deleted', ids });
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
