/**
 * The mail service (docs/lifecycle.md): detail, raw bytes, metrics, the change feed, the operator's actions
 * (dequeue, requeue, delete, purge: mail-actions.ts, bulk-actions.ts), and the list (list/list.service.ts).
 * Rows never leave this module: callers get the contract's `Mail`.
 */
import { MAIL_DETAIL_EVENTS, MailStatus, type Mail, type MailDetail, type MailEventsResponse } from '@outbox/contract';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { createBulkActions } from './bulk-actions.js';
import { contentRemoved } from './content-retention.js';
import { createMailActions, mailNotFound } from './mail-actions.js';
import { toMail, toMailDetail, toMailEvent } from './mail-mapping.js';
import { createListService } from '../list/list.service.js';
import * as repo from './mail.repository.js';

export { statusName, toMail } from './mail-mapping.js';

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

  const list = createListService({ store, withRecipients });

  /**
   * The row, its message (headers and bodies parsed from the stored bytes) and the first MAIL_DETAIL_EVENTS of its
   * event log; `eventsNextCursor` continues it with listMailEvents (docs/api.md#mail), so no read is unbounded.
   */
  async function getMailDetail(id: number): Promise<MailDetail & { eventsNextCursor: string | null }> {
    const row = await repo.findMailRow(db, id);
    if (!row) throw mailNotFound(id);
    const [recipients, content, events] = await Promise.all([
      repo.listRecipients(db, [id], ['to', 'cc', 'bcc', 'envelope']),
      repo.findMailContent(db, id),
      repo.listEvents(db, id, { limit: MAIL_DETAIL_EVENTS + 1 }),
    ]);
    const page = events.slice(0, MAIL_DETAIL_EVENTS);
    const detail = await toMailDetail(row, recipients.get(id) ?? [], content, page);
    return { ...detail, eventsNextCursor: events.length > MAIL_DETAIL_EVENTS ? String(page.at(-1)!.id) : null };
  }

  /** One page of a mail's events, oldest first: `GET /api/v1/mail/{id}/events`. */
  async function listMailEvents(
    id: number,
    query: { limit?: number | undefined; cursor?: string | undefined },
  ): Promise<MailEventsResponse> {
    let afterId: number | undefined;
    if (query.cursor !== undefined) {
      if (!/^[1-9][0-9]{0,15}$/.test(query.cursor))
        throw badRequest('invalid_cursor', 'query.cursor is not a cursor this endpoint gave out (meta.nextCursor).');
      afterId = Number(query.cursor);
    }
    const limit = query.limit ?? 100;
    const [row, events] = await Promise.all([repo.findMailRow(db, id), repo.listEvents(db, id, { limit: limit + 1, afterId })]);
    if (!row) throw mailNotFound(id);
    const page = events.slice(0, limit);
    return { data: page.map(toMailEvent), meta: { nextCursor: events.length > limit ? String(page.at(-1)!.id) : null } };
  }

  /** The stored RFC 5322 bytes, as they go to the provider; 410 content_removed once content retention removed them. */
  async function getRawMessage(id: number): Promise<Buffer> {
    const row = await repo.findMailRow(db, id);
    if (!row) throw mailNotFound(id);
    if (row.content_removed_at !== null) throw contentRemoved(id, row.content_removed_at, 'its raw message is no longer stored.');
    const content = await repo.findMailContent(db, id);
    if (!content?.raw) throw notFound('message_not_stored', `Mail ${id} has no stored message (demo data has none).`);
    return content.raw;
  }

  const actions = createMailActions({ store, clock, notify, withRecipients });
  const bulk = createBulkActions({ store, clock, notify });

  /** Mails per status and the acceptance time of the oldest Queued one: for /metrics. */
  async function queueHealth(): Promise<{ counts: Record<number, number>; oldestQueuedReceivedAt: number | undefined }> {
    const [counts, oldest] = await Promise.all([repo.getStatusCounts(db), repo.findOldestReceivedAt(db, MailStatus.Queued, clock.now())]);
    return { counts: Object.fromEntries(counts), oldestQueuedReceivedAt: oldest };
  }

  return {
    queueHealth,
    listMails: list.listMails,
    searchSampleSettled: list.searchSampleSettled,
    getMailDetail,
    listMailEvents,
    /** 404 mail_not_found unless the mail exists. */
    async ensureExists(id: number): Promise<void> {
      if (!(await repo.findMailRow(db, id))) throw mailNotFound(id);
    },
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
