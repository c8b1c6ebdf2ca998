/**
 * The mail service (PRODUCT.md §1): listing, detail, raw bytes, metrics, the change feed, and the
 * operator's actions (dequeue, requeue, delete, purge), which are mail-actions.ts.
 * Rows never leave this module: callers get the contract's `Mail`.
 */
import { MailStatus, STATUSES, type Mail, type MailDetail, type MailListMeta, type MailSort } from '@outbox/contract';
import type { Clock } from '../clock.js';
import { notFound } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { createBulkActions } from './bulk-actions.js';
import { createMailActions, mailNotFound } from './mail-actions.js';
import { toMail, toMailDetail } from './mail-mapping.js';
import * as repo from './mail.repository.js';

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

  const actions = createMailActions({ store, clock, notify, withRecipients });
  const bulk = createBulkActions({ store, clock, notify });

  /** Mails per status and the acceptance time of the oldest Queued one: for /metrics. */
  async function queueHealth(): Promise<{ counts: Record<number, number>; oldestQueuedReceivedAt: number | undefined }> {
    const [counts, oldest] = await Promise.all([repo.getStatusCounts(db), repo.findOldestReceivedAt(db, MailStatus.Queued)]);
    return { counts: Object.fromEntries(counts), oldestQueuedReceivedAt: oldest };
  }

  return {
    queueHealth,
    listMails,
    getMailDetail,
    getRawMessage,
    ...actions,
    ...bulk,
    notify,
    onChange(listener: MailChangeListener): () => void {
      // The feed carries only what notify() published, here or in another instance of this same code.
      return store.changes.subscribe(listener as (change: { type: string; ids: number[] }) => void);
    },
  };
}

export type MailService = ReturnType<typeof createMailService>;
