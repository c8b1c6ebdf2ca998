/**
 * The operator's actions on mails (docs/lifecycle.md): dequeue, requeue, delete, and retention's purge. Each
 * is a transition (lifecycle.ts, applied by `applyTransitions`) plus its audit entry, in one transaction;
 * a miss becomes 404 (no such mail) or 409 (another status), explained after the transaction, never a
 * silent success. Part of the mail service (mail.service.ts spreads these into it).
 */
import { DELETABLE_STATUSES, isStatusCode, type Mail, type MailStatusCode } from '@outbox/contract';
import { insertAuditEntries, type AuditEntry } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { deleteApplicationEventsBefore } from '../events/application-events.repository.js';
import { conflict, notFound, type AppError } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { deleteTransition, dequeueTransition, requeueTransition } from './lifecycle.js';
import { statusName } from './mail-mapping.js';
import * as repo from './mail.repository.js';
import { applyTransitions } from './write/apply.js';
import type { Transition } from './transition-types.js';

export function mailNotFound(id: number): AppError {
  return notFound('mail_not_found', `No mail has id ${id}.`);
}

export interface MailActionsDeps {
  store: Store;
  clock: Clock;
  notify(change: { type: 'queued' | 'updated' | 'deleted'; ids: number[] }): void;
  withRecipients(rows: MailRow[]): Promise<Mail[]>;
}

export function createMailActions({ store, clock, notify, withRecipients }: MailActionsDeps) {
  const { db } = store;

  /** Explains why a conditional change matched no row: the mail is gone (404) or in another state (409). */
  async function explainMiss(id: number, action: string, allowed: readonly number[]): Promise<AppError> {
    const row = await repo.findMailRow(db, id);
    if (!row) return mailNotFound(id);
    // Allowed by its status, refused because content retention removed the message it would send (a requeue).
    if (row.content_removed_at !== null && allowed.includes(row.status)) {
      return conflict(
        'content_removed',
        `Mail ${id} cannot be ${action}: its content (raw message, bodies, attachments) was removed on ${new Date(row.content_removed_at).toISOString()} by content retention, so there is nothing to send. Submit it again from its application.`,
      );
    }
    const allowedNames = allowed.map(statusName).join(', ');
    return conflict('invalid_status', `Mail ${id} is ${statusName(row.status)}; only ${allowedNames} mails can be ${action}.`);
  }

  /**
   * One operator action on one mail: the transition and its audit entry in one transaction. A miss
   * becomes 404 (no such mail) or 409 (another status), explained after the transaction.
   */
  async function act(id: number, transition: Transition, audit: (row: MailRow, from: number) => AuditEntry): Promise<MailRow | undefined> {
    return db.transaction().execute(async (trx) => {
      const { moved, rows } = await applyTransitions(trx, [transition], { returnRows: true });
      const row = rows.get(id);
      const from = moved[0]?.from;
      if (!row || from === undefined || from === null) return undefined;
      await insertAuditEntries(trx, [audit(row, from)]);
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
    const transition = requeueTransition(id, at, actor);
    const row = await act(id, transition, (_row, from) => ({
      at,
      actor,
      action: 'mail.requeue',
      target: `mail:${id}`,
      before: { status: statusName(from) },
      after: { status: 'Queued' },
    }));
    if (!row) throw await explainMiss(id, 'requeued', transition.from);
    notify({ type: 'queued', ids: [id] });
    const [mail] = await withRecipients([row]);
    return mail!;
  }

  async function deleteMail(id: number, actor: string): Promise<{ id: number }> {
    const at = clock.now();
    const transition = deleteTransition(id, DELETABLE_STATUSES, { at, actor });
    // The mail's own event log goes with it; the audit log keeps what was deleted, the application's
    // `mail.deleted` event outlives it.
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
   * The audit log records each batch. Application events older than that go too (whatever their mail's
   * status: by then the webhooks had the whole retention period to deliver them); a purge makes no
   * `mail.deleted` event (docs/webhooks.md#events).
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
    while ((await deleteApplicationEventsBefore(db, before, 1000)) === 1000) {
      // Batches of 1,000, one short statement pair each, like the mails above.
    }
    return purged;
  }

  return { explainMiss, dequeueMail, requeueMail, deleteMail, purgeFinishedMails };
}
