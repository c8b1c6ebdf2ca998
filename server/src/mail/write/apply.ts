/**
 * The one place a mail changes status (the single writer, with the other files of this folder: a mail's
 * creation, the claim, the counters and the import). A transition is a conditional UPDATE (or DELETE) that only
 * happens while the mail is in one of the statuses it may leave, its event row, and the move of the status
 * counters, all in the caller's transaction. Every writer goes through `applyTransitions`: the operator's actions
 * (dequeue, requeue, delete, purge), the worker (outcomes, retries, lease sweeps, release at stop), bounce reports
 * and the demo data.
 *
 * The parts: the queue's side of a move (queue-moves.ts: `mail_queue`, migration 022, decides every move out of
 * Queued or Processing), the record's (record-moves.ts) and the events, application events and statistics written
 * with them (event-writes.ts).
 *
 * Speed: transitions of the same shape (same from-status, same kind of change) are applied by one UPDATE
 * joined to the group's values per 500 mails (PostgreSQL: `unnest` of one array per column, prepared once per
 * connection; SQLite: a JSON array read by `json_each`), never one statement per mail, so a worker's group commit
 * of 50 outcomes is one change of the queue, one UPDATE of the records, one INSERT of events and one counter move,
 * whatever the outcomes were. The types are ../transition-types.ts.
 */
import { isStatusCode, MailStatus, type ApplicationEventType, type MailStatusCode } from '@outbox/contract';
import { applicationEventData, applicationEventTypeOf, type EventMail, type EventRecipient } from '../../events/application-event-data.js';
import { newEventId } from '../../events/application-events.repository.js';
import type { DbOrTrx } from '../../store/connection.js';
import { withLeases } from '../leases.js';
import { createStatementBatch, type StatementBatch } from '../../store/statement-batch.js';
import type { MailRow, NewApplicationEventRow } from '../../store/schema.js';
import { countStatistic, createStatisticsMoves } from '../../statistics/statistics-moves.js';
import type { ApplyOptions, AppliedTransitions, DeleteTransition, StatusTransition, Transition } from '../transition-types.js';
import { CHUNK } from './columns.js';
import { addMove, moveStatusCounts } from './counters.js';
import { appendCounted, eventMailOf, finishStatistics, insertEvents, listEnvelopeRecipients, type NewEvent } from './event-writes.js';
import { enqueue, isQueueStatus, moveInQueue, queueActionOf } from './queue-moves.js';
import { deleteFrom, storedStatusOf, updateFrom, type EventColumns } from './record-moves.js';

/**
 * Applies the transitions in the caller's transaction and returns which mails moved. Ids must be distinct.
 * Make it the last write of the transaction: the counters it moves are a hot spot (see moveStatusCounts).
 * A mail comes into being only through `insertMails`.
 */
export async function applyTransitions(
  db: DbOrTrx,
  transitions: readonly Transition[],
  options: ApplyOptions = {},
): Promise<AppliedTransitions> {
  if (transitions.some((t) => t.from === null))
    throw new RangeError('applyTransitions: a mail is created by insertMails, not by a transition');
  // The events, the application events and a single counter move read nothing the others write: on
  // PostgreSQL they go as one statement, one round trip instead of three (a worker's flush of 50 outcomes
  // spent ~6 ms of its ~40 in the two inserts' round trips on a busy machine).
  const writes = createStatementBatch(db);
  const result = await apply(db, transitions, options, new Map(), writes);
  await writes.flush();
  return result;
}

/** A mail being created: what its application event says, known without a read. */
export interface CreatedMail {
  mail: EventMail;
  recipients: EventRecipient[];
}

/**
 * `writes`: the batch (store/statement-batch.ts) the events, the application events and the counter move join:
 * applyTransitions's own, or insertMails's, with `trailingEvents` appended after the transitions' own
 * application events (in the same INSERT, so in order).
 */
export async function apply(
  db: DbOrTrx,
  transitions: readonly Transition[],
  options: ApplyOptions,
  created: Map<number, CreatedMail>,
  writes: StatementBatch,
  trailingEvents: readonly NewApplicationEventRow[] = [],
): Promise<AppliedTransitions> {
  const result: AppliedTransitions = { moved: [], missed: [], rows: new Map() };
  if ((options.counts === undefined) !== (options.statistics === undefined))
    throw new RangeError('applyTransitions: a caller that writes the counters writes the statistics too (counts and statistics)');
  if (transitions.length === 0) {
    if (trailingEvents.length > 0) await appendCounted(db, trailingEvents, new Map(), options, writes);
    return result;
  }
  if (new Set(transitions.map((t) => t.id)).size !== transitions.length) throw new RangeError('applyTransitions: duplicate mail ids');

  const eventTypes = new Map<number, ApplicationEventType>();
  if (options.applicationEvents !== false) {
    for (const t of transitions) {
      const type = applicationEventTypeOf(t);
      if (type) eventTypes.set(t.id, type);
    }
  }
  // Read before the moves: a delete takes the recipients with it, and a worker's outcome wrote them already.
  const recipientsOf = await listEnvelopeRecipients(
    db,
    transitions.filter((t) => t.from !== null && eventTypes.has(t.id) && !options.eventRecipients?.has(t.id)).map((t) => t.id),
  );

  // A transition allowed from several statuses needs to know which one the mail is in, for its event and
  // counters; it is then applied from exactly that status, so a mail that changed meanwhile is a miss.
  const ambiguous = transitions.filter((t) => t.from !== null && t.from.length > 1).map((t) => t.id);
  const current = ambiguous.length > 0 ? await findStatuses(db, ambiguous) : new Map<number, number>();

  const fromOf = new Map<number, MailStatusCode | null>();
  const groups = new Map<string, { from: MailStatusCode; transitions: Array<StatusTransition | DeleteTransition> }>();
  for (const t of transitions) {
    if (t.from === null) {
      fromOf.set(t.id, null);
      continue;
    }
    const status = t.from.length === 1 ? t.from[0] : current.get(t.id);
    if (status === undefined || !isStatusCode(status) || !t.from.includes(status)) continue;
    fromOf.set(t.id, status);
    const key = `${status}|${shapeOf(t)}|${t.to === 'deleted' ? 'deleted' : queueActionOf(status, t.to)}`;
    const group = groups.get(key);
    if (group) group.transitions.push(t);
    else groups.set(key, { from: status, transitions: [t] });
  }

  const movedIds = new Set<number>(transitions.filter((t) => t.from === null).map((t) => t.id));
  const eventMails = new Map<number, EventMail>([...created].map(([id, c]) => [id, c.mail]));
  const enqueued: number[] = [];
  for (const { from, transitions: group } of groups.values()) {
    for (let start = 0; start < group.length; start += CHUNK) {
      let chunk = group.slice(start, start + CHUNK);
      const to = chunk[0]!.to;
      // A move out of Queued or Processing is decided in the queue (migration 022): its row's lease is the
      // condition, and the row is leased, put back to wait, or removed. The record follows for the mails that passed.
      if (to !== 'deleted' && isQueueStatus(from)) {
        const passed = await moveInQueue(db, from, chunk as StatusTransition[]);
        if (to === MailStatus.Processing && from === MailStatus.Queued) {
          // A claim writes only the queue: the record shows it through its lease (mail/leases.ts).
          for (const id of passed.keys()) movedIds.add(id);
          if (options.returnRows) {
            const shown = await withLeases(
              db,
              await db
                .selectFrom('mails')
                .selectAll()
                .where('id', 'in', [...passed.keys(), 0])
                .execute(),
            );
            for (const row of shown) result.rows.set(row.id, row);
          }
          continue;
        }
        chunk = (chunk as StatusTransition[])
          .filter((t) => passed.has(t.id))
          .map((t) =>
            from === MailStatus.Processing && t.set?.attempts === undefined ? { ...t, set: { ...t.set, attempts: passed.get(t.id)! } } : t,
          );
        if (chunk.length === 0) continue;
      }
      const returning = { rows: options.returnRows === true, events: chunk.some((t) => eventTypes.has(t.id)) };
      const rows =
        to === 'deleted'
          ? await deleteFrom(db, from, chunk, returning)
          : await updateFrom(db, storedStatusOf(from), chunk as StatusTransition[], returning, eventTypes);
      for (const row of rows) {
        const id = Number(row.id);
        movedIds.add(id);
        if (to === MailStatus.Queued && !isQueueStatus(from)) enqueued.push(id);
        if (returning.events && eventTypes.has(id)) eventMails.set(id, eventMailOf(row as EventColumns, to === 'deleted'));
        if (options.returnRows) {
          const { application_name: _name, ...mailRow } = row as MailRow & { application_name?: unknown };
          result.rows.set(id, { ...(mailRow as MailRow), lease_owner: null, lease_expires_at: null });
        }
      }
    }
  }
  // Back in the queue (a requeue): its row, due when the record says.
  if (enqueued.length > 0) await enqueue(db, enqueued);

  const events: NewEvent[] = [];
  const applicationEvents: NewApplicationEventRow[] = [];
  const deltas = new Map<number, number>();
  const move = (status: number, delta: number) => deltas.set(status, (deltas.get(status) ?? 0) + delta);
  for (const t of transitions) {
    if (!movedIds.has(t.id)) {
      result.missed.push(t.id);
      continue;
    }
    const from = fromOf.get(t.id) ?? null;
    result.moved.push({ id: t.id, from, to: t.to });
    // The counters count stored statuses: a leased mail is stored Queued (mail/leases.ts shows it Processing).
    if (from !== null) move(storedStatusOf(from), -1);
    if (t.to !== 'deleted') {
      move(storedStatusOf(t.to), 1);
      if (t.event) events.push({ mailId: t.id, at: t.at, ...t.event, fromStatus: from, toStatus: t.to });
    }
    const type = eventTypes.get(t.id);
    const mail = eventMails.get(t.id);
    if (type && mail) {
      const recipients = created.get(t.id)?.recipients ?? options.eventRecipients?.get(t.id) ?? recipientsOf.get(t.id) ?? [];
      applicationEvents.push({
        id: newEventId(),
        type,
        mail_id: t.id,
        mail_seq: mail.sequence,
        api_key_id: mail.apiKeyId,
        created_at: t.to === 'deleted' ? (t.at ?? 0) : t.at,
        payload: JSON.stringify(applicationEventData(type, t, from, mail, recipients)),
      });
    }
  }
  await insertEvents(db, events, writes);
  const statistics = createStatisticsMoves();
  // Every mail a submission stores is accepted, one stored Error at once (every recipient suppressed) included.
  for (const t of transitions) {
    if (t.from !== null || !movedIds.has(t.id)) continue;
    const mail = eventMails.get(t.id);
    if (mail) countStatistic(statistics, 'accepted', mail.apiKeyId, t.at);
  }
  await appendCounted(db, [...applicationEvents, ...trailingEvents], eventMails, options, writes, statistics);
  // A caller making several moves in one transaction (the worker's flush) writes the counters once, last.
  if (options.counts) for (const [status, delta] of deltas) addMove(options.counts, status, delta);
  else await moveStatusCounts(db, deltas, writes);
  await finishStatistics(db, statistics, options, writes);
  return result;
}

/** What decides the SQL of a transition: transitions of the same shape (and from-status) share a statement. */
function shapeOf(t: StatusTransition | DeleteTransition): string {
  if (t.to === 'deleted') return 'delete';
  const lease = t.set?.lease === undefined ? 'keep' : t.set.lease === null ? 'clear' : 'set';
  const attempts = t.set?.attempts === 'increment' ? 'increment' : 'value';
  const guard = [t.lease?.owner !== undefined, t.lease?.expiresAt !== undefined, t.lease?.expiredBy !== undefined].map(Number).join('');
  return `update|${lease}|${attempts}|${guard}|${t.withContent === true ? 'content' : ''}`;
}

/** Current status per id as it shows (a leased mail is Processing); ids with no mail are left out. */
export async function findStatuses(db: DbOrTrx, ids: number[]): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  for (let start = 0; start < ids.length; start += CHUNK) {
    const rows = await db
      .selectFrom('mails')
      .leftJoin('mail_queue', 'mail_queue.mail_id', 'mails.id')
      .select(['mails.id', 'mails.status', 'mail_queue.lease_owner'])
      .where('mails.id', 'in', ids.slice(start, start + CHUNK))
      .execute();
    for (const row of rows)
      statuses.set(row.id, row.status === MailStatus.Queued && row.lease_owner !== null ? MailStatus.Processing : row.status);
  }
  return statuses;
}
