/**
 * The writes that go with the single writer's moves (apply.ts), in the same transaction: the mail's own events, and
 * the application events (the webhooks' transactional outbox) with the hourly statistics they count. Each transition
 * that tells the mail's application something (events/application-event-data.ts) appends its application event and
 * advances `mails.event_seq` in the record's UPDATE (record-moves.ts), so a committed move always has its event and
 * no event exists without its move; the envelope recipients of those mails are read in one query, the API key's name
 * comes back with the UPDATE.
 */
import type { ApplicationEventType, MailEventType } from '@outbox/contract';
import type { EventMail, EventRecipient } from '../../events/application-event-data.js';
import { appendApplicationEvents } from '../../events/application-events.repository.js';
import type { DbOrTrx } from '../../store/connection.js';
import { insertRows } from '../../store/row-insert.js';
import type { StatementBatch } from '../../store/statement-batch.js';
import type { NewApplicationEventRow } from '../../store/schema.js';
import {
  COUNTER_OF_EVENT,
  countLatency,
  countStatistic,
  createStatisticsMoves,
  mergeStatisticsMoves,
  type StatisticsMoves,
} from '../../statistics/statistics-moves.js';
import { writeStatistics } from '../../statistics/statistics.repository.js';
import type { ApplyOptions } from '../transition-types.js';
import { CHUNK } from './columns.js';
import type { EventColumns } from './record-moves.js';

export interface NewEvent {
  mailId: number;
  at: number;
  actor: string;
  type: MailEventType;
  fromStatus: number | null;
  toStatus: number | null;
  detail?: Record<string, unknown> | undefined;
}

export async function insertEvents(db: DbOrTrx, events: NewEvent[], writes: StatementBatch | undefined): Promise<void> {
  for (let start = 0; start < events.length; start += CHUNK) {
    const insert = insertRows(
      db,
      'mail_events',
      events.slice(start, start + CHUNK).map((e) => ({
        mail_id: e.mailId,
        at: e.at,
        actor: e.actor,
        type: e.type,
        from_status: e.fromStatus,
        to_status: e.toStatus,
        detail: e.detail ? JSON.stringify(e.detail) : null,
      })),
    );
    if (writes) await writes.add(insert);
    else await db.executeQuery(insert.compile());
  }
}

/**
 * Appends application events and counts them in the hourly statistics (migration 024), one to one: the counters
 * count exactly the events the applications are told of (statistics/statistics-moves.ts). A `mail.sent` also adds
 * its mail's accepted → sent latency, from the `received_at` the move returned.
 */
export async function appendCounted(
  db: DbOrTrx,
  rows: readonly NewApplicationEventRow[],
  eventMails: ReadonlyMap<number, EventMail>,
  options: ApplyOptions,
  writes: StatementBatch,
  statistics?: StatisticsMoves,
): Promise<void> {
  await appendApplicationEvents(db, rows, writes);
  const moves = statistics ?? createStatisticsMoves();
  for (const row of rows) {
    const counter = COUNTER_OF_EVENT[row.type as ApplicationEventType];
    if (counter === undefined) continue;
    const apiKeyId = row.api_key_id === null || row.api_key_id === undefined ? null : Number(row.api_key_id);
    countStatistic(moves, counter, apiKeyId, row.created_at);
    const mailId = row.mail_id ?? undefined;
    const receivedAt = row.type === 'mail.sent' && mailId !== undefined ? eventMails.get(Number(mailId))?.receivedAt : undefined;
    if (receivedAt !== undefined) countLatency(moves, apiKeyId, row.created_at, row.created_at - receivedAt);
  }
  if (!statistics) await finishStatistics(db, moves, options, writes);
}

/**
 * Writes the statistics after the counters (statistics.repository.ts says why: the lock order), or hands them to a
 * caller that writes both itself (`options.statistics`, with `options.counts`).
 */
export async function finishStatistics(db: DbOrTrx, moves: StatisticsMoves, options: ApplyOptions, writes: StatementBatch): Promise<void> {
  if (options.statistics) return mergeStatisticsMoves(options.statistics, moves);
  if (moves.size === 0) return;
  await writes.flush();
  await writeStatistics(db, moves);
}

export function eventMailOf(row: EventColumns, isDelete: boolean): EventMail {
  return {
    id: Number(row.id),
    messageId: row.message_id,
    subject: row.subject,
    idempotencyKey: row.idempotency_key,
    apiKeyId: row.api_key_id === null ? null : Number(row.api_key_id),
    application: row.application_name,
    receivedAt: Number(row.received_at),
    // A delete does not advance the stored counter (the row is gone): its event is the next number.
    sequence: Number(row.event_seq) + (isDelete ? 1 : 0),
  };
}

/** Each mail's envelope recipients with their outcome and last reply, in stored order; one query per 900 mails. */
export async function listEnvelopeRecipients(db: DbOrTrx, ids: number[]): Promise<Map<number, EventRecipient[]>> {
  const byMail = new Map<number, EventRecipient[]>();
  for (let start = 0; start < ids.length; start += 900) {
    const rows = await db
      .selectFrom('mail_recipients')
      .select(['mail_id', 'address', 'outcome', 'reply'])
      .where('mail_id', 'in', ids.slice(start, start + 900))
      .where('kind', '=', 'envelope')
      .orderBy('mail_id')
      .orderBy('position')
      .execute();
    for (const row of rows) {
      const list = byMail.get(row.mail_id);
      const recipient = { address: row.address, outcome: row.outcome, reply: row.reply };
      if (list) list.push(recipient);
      else byMail.set(row.mail_id, [recipient]);
    }
  }
  return byMail;
}
