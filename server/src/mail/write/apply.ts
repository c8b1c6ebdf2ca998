/**
 * The one place a mail changes status (the single writer, with the other files of this folder: a mail's
 * creation, the claim, the counters and the import). A transition is a conditional UPDATE (or DELETE) that only
 * happens while the mail is in one of the statuses it may leave, its event row, and the move of the status
 * counters, all in the caller's transaction. Every writer goes through `applyTransitions`: the operator's actions
 * (dequeue, requeue, delete, purge), the worker (outcomes, retries, lease sweeps, release at stop), bounce reports
 * and the demo data.
 *
 * The queue is its own table (`mail_queue`, migration 022): a move out of Queued or Processing is decided on the
 * mail's queue row (its lease is the condition, its row lock orders a claim against a dequeue), and the record
 * follows in the same transaction (`moveInQueue`). A mail is Processing exactly while its queue row holds a lease;
 * its record stays Queued (mail/leases.ts shows it).
 *
 * Speed: transitions of the same shape (same from-status, same kind of change) are applied by one UPDATE
 * joined to the group's values per 500 mails (PostgreSQL: `unnest` of one array per column, prepared once per
 * connection; SQLite: a JSON array read by `json_each`), never one statement per mail, so a worker's group commit
 * of 50 outcomes is one change of the queue, one UPDATE of the records, one INSERT of events and one counter move,
 * whatever the outcomes were.
 *
 * Each transition that tells the mail's application something (events/application-event-data.ts) also
 * appends its application event (the webhooks' transactional outbox) and advances `mails.event_seq` in the
 * same UPDATE, so a committed move always has its event and no event exists without its move; the envelope
 * recipients of those mails are read in one query, the API key's name comes back with the UPDATE.
 *
 * Longer than ~250 lines on purpose: the SQL of every kind of move, with the conditions that make it safe
 * (from-status, lease) and the counter rules, is read in one place. The types are ../transition-types.ts.
 */
import { sql, type RawBuilder } from 'kysely';
import { isStatusCode, MailStatus, type ApplicationEventType, type MailEventType, type MailStatusCode } from '@outbox/contract';
import { applicationEventData, applicationEventTypeOf, type EventMail, type EventRecipient } from '../../events/application-event-data.js';
import { appendApplicationEvents, newEventId } from '../../events/application-events.repository.js';
import { PREPARED, type DbOrTrx } from '../../store/connection.js';
import { LEASED_IDS, withLeases } from '../leases.js';
import { insertRows } from '../../store/row-insert.js';
import { createStatementBatch, engineOf, type StatementBatch } from '../../store/statement-batch.js';
import type { MailRow, NewApplicationEventRow } from '../../store/schema.js';
import type { ApplyOptions, AppliedTransitions, DeleteTransition, StatusTransition, Transition } from '../transition-types.js';
import { CHUNK, EVENT_COLUMNS, MAIL_COLUMNS } from './columns.js';
import { addMove, moveStatusCounts } from './counters.js';
import {
  COUNTER_OF_EVENT,
  countLatency,
  countStatistic,
  createStatisticsMoves,
  mergeStatisticsMoves,
  type StatisticsMoves,
} from '../../statistics/statistics-moves.js';
import { writeStatistics } from '../../statistics/statistics.repository.js';

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

/** Extra RETURNING columns of a move that writes an application event. */
interface EventColumns {
  id: number;
  event_seq: number;
  message_id: string;
  subject: string;
  idempotency_key: string | null;
  api_key_id: number | null;
  received_at: number;
  application_name: string | null;
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

/**
 * Appends application events and counts them in the hourly statistics (migration 024), one to one: the counters
 * count exactly the events the applications are told of (statistics/statistics-moves.ts). A `mail.sent` also adds
 * its mail's accepted → sent latency, from the `received_at` the move returned.
 */
async function appendCounted(
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
async function finishStatistics(db: DbOrTrx, moves: StatisticsMoves, options: ApplyOptions, writes: StatementBatch): Promise<void> {
  if (options.statistics) return mergeStatisticsMoves(options.statistics, moves);
  if (moves.size === 0) return;
  await writes.flush();
  await writeStatistics(db, moves);
}

/** Statuses a mail has while it is in the queue (a row in `mail_queue`): waiting, or leased. */
function isQueueStatus(status: MailStatusCode): status is typeof MailStatus.Queued | typeof MailStatus.Processing {
  return status === MailStatus.Queued || status === MailStatus.Processing;
}

/** The status a record stores for a status as shown: a leased (Processing) mail's record stays Queued. */
function storedStatusOf(status: MailStatusCode): MailStatusCode {
  return status === MailStatus.Processing ? MailStatus.Queued : status;
}

/** SQLite's name for the index of `mail_queue`'s primary key (a `bigint` key is not the rowid). */
const SQLITE_QUEUE_KEY = 'sqlite_autoindex_mail_queue_1';

/**
 * What a move does to the mail's queue row: leases it, puts it (back) to wait, removes it, or keeps it as it is
 * (a Processing mail that stays Processing: a bounce report's event while a retry is under way).
 */
function queueActionOf(from: MailStatusCode, to: MailStatusCode): 'lease' | 'wait' | 'leave' | 'stay' {
  if (from === MailStatus.Processing && to === MailStatus.Processing) return 'stay';
  return to === MailStatus.Processing ? 'lease' : to === MailStatus.Queued ? 'wait' : 'leave';
}

/**
 * The queue's side of moves out of Queued (a waiting row: `lease_owner is null`) or Processing (a leased row, with
 * the transitions' lease conditions): one conditional UPDATE or DELETE of `mail_queue` for the group, whose rows'
 * locks also make a claim and an operator's move of the same mail serialise (exactly one wins). Answers the mails
 * that passed with their attempts as the queue holds them (the claim counted the one under way). Like `updateFrom`,
 * the group's values go as one array per column (PostgreSQL) or one JSON parameter (SQLite): one text per shape.
 */
async function moveInQueue(
  db: DbOrTrx,
  from: typeof MailStatus.Queued | typeof MailStatus.Processing,
  chunk: readonly StatusTransition[],
): Promise<Map<number, number>> {
  const postgres = engineOf(db) === 'postgres';
  const first = chunk[0]!;
  const action = queueActionOf(from, first.to);
  const columns: Array<{ name: string; type: 'bigint' | 'integer' | 'text'; value: (t: StatusTransition) => unknown }> = [
    { name: 'id', type: 'bigint', value: (t) => t.id },
  ];
  const conditions: RawBuilder<unknown>[] = [
    sql`q.mail_id = v.id`,
    from === MailStatus.Processing ? sql`q.lease_owner is not null` : sql`q.lease_owner is null`,
  ];
  if (from === MailStatus.Queued && first.lease !== undefined) throw new RangeError('moveInQueue: a waiting mail has no lease to check');
  if (first.lease?.owner !== undefined) {
    columns.push({ name: 'held_by', type: 'text', value: (t) => t.lease?.owner });
    conditions.push(sql`q.lease_owner = v.held_by`);
  }
  if (first.lease?.expiresAt !== undefined) {
    columns.push({ name: 'held_until', type: 'bigint', value: (t) => t.lease?.expiresAt });
    conditions.push(sql`q.lease_expires_at = v.held_until`);
  }
  if (first.lease?.expiredBy !== undefined) {
    columns.push({ name: 'expired_by', type: 'bigint', value: (t) => t.lease?.expiredBy });
    conditions.push(sql`q.lease_expires_at <= v.expired_by`);
  }
  // 'stay' (a bounce's event while a retry is under way) only checks the lease, taking no lock on the queue row: its
  // caller locked the record first (the event sequence), and an outcome locks the queue row before the record, so a
  // lock here could deadlock with it. An outcome that lands first changes the record's status, and the record's
  // UPDATE (conditional on the stored status) then misses.
  const assignments: RawBuilder<unknown>[] = [];
  if (action === 'lease') {
    if (from === MailStatus.Processing) throw new RangeError('moveInQueue: a leased mail is renewed by renewLeases');
    columns.push(
      { name: 'owner', type: 'text', value: (t) => t.set?.lease?.owner },
      { name: 'expires', type: 'bigint', value: (t) => t.set?.lease?.expiresAt },
      { name: 'at', type: 'bigint', value: (t) => t.at },
    );
    assignments.push(sql`lease_owner = v.owner`, sql`lease_expires_at = v.expires`, sql`leased_at = v.at`);
    if (first.set?.attempts === 'increment') assignments.push(sql`attempts = q.attempts + 1`);
  } else if (action === 'wait') {
    columns.push(
      { name: 'next_at', type: 'bigint', value: (t) => t.set?.nextAttemptAt ?? null },
      { name: 'new_attempts', type: 'integer', value: (t) => (typeof t.set?.attempts === 'number' ? t.set.attempts : null) },
    );
    assignments.push(
      sql`lease_owner = null`,
      sql`lease_expires_at = null`,
      sql`leased_at = null`,
      sql`due_at = coalesce(v.next_at, q.due_at)`,
      sql`attempts = coalesce(v.new_attempts, q.attempts)`,
    );
  }
  const names = sql.join(columns.map((c) => sql.ref(c.name)));
  const where = sql.join(conditions, sql` and `);
  let rows: Array<{ mail_id: number; attempts: number }>;
  if (postgres) {
    const values = sql`unnest(${sql.join(columns.map((c) => sql`${chunk.map((t) => c.value(t) ?? null)}::${sql.raw(c.type)}[]`))}) as v (${names})`;
    ({ rows } =
      action === 'stay'
        ? await sql<{
            mail_id: number;
            attempts: number;
          }>`select q.mail_id, q.attempts from mail_queue q, ${values} where ${where}`.execute(db)
        : action === 'leave'
          ? await sql<{ mail_id: number; attempts: number }>`${sql.raw(PREPARED)}
            delete from mail_queue q using ${values} where ${where} returning q.mail_id, q.attempts`.execute(db)
          : await sql<{ mail_id: number; attempts: number }>`${sql.raw(PREPARED)}
            update mail_queue q set ${sql.join(assignments, sql`, `)} from ${values} where ${where}
            returning q.mail_id, q.attempts`.execute(db));
  } else {
    // SQLite: each of the group's mails is found by its key (`v` first, then `mail_queue`'s primary-key index),
    // whatever the queue's statistics say. Left to the planner, a store analyzed while its queue was empty (every
    // store its migrations made) saw the partial indexes as empty and scanned every waiting row, reading the
    // JSON once per row: a group of 2,500 against 80,000 waiting mails took seconds.
    const json = JSON.stringify(chunk.map((t) => columns.map((c) => c.value(t) ?? null)));
    const cells = columns.map((c, i) => sql`cast(value ->> ${sql.lit(i)} as ${sql.raw(c.type)})`);
    const values = sql`v (${names}) as (select ${sql.join(cells)} from json_each(${json}))`;
    const byKey = sql.raw(`mail_queue as q indexed by ${SQLITE_QUEUE_KEY}`);
    ({ rows } =
      action === 'stay'
        ? await sql<{ mail_id: number; attempts: number }>`with ${values}
            select q.mail_id, q.attempts from v cross join ${byKey} where ${where}`.execute(db)
        : action === 'leave'
          ? await sql<{ mail_id: number; attempts: number }>`with ${values}
            delete from mail_queue where mail_id in (select q.mail_id from v cross join ${byKey} where ${where})
            returning mail_id, attempts`.execute(db)
          : await sql<{ mail_id: number; attempts: number }>`with ${values}
            update ${byKey} set ${sql.join(assignments, sql`, `)} from v where ${where}
            returning mail_id, attempts`.execute(db));
  }
  return new Map(rows.map((row) => [Number(row.mail_id), Number(row.attempts)]));
}

/** Queue rows for mails that came back to Queued from outside the queue (a requeue): due when their record says. */
async function enqueue(db: DbOrTrx, ids: readonly number[]): Promise<void> {
  for (let start = 0; start < ids.length; start += CHUNK) {
    await sql`insert into mail_queue (mail_id, due_at, attempts, api_key_id, lane)
      select id, next_attempt_at, attempts, coalesce(api_key_id, 0), lane from mails where id in (${sql.join(ids.slice(start, start + CHUNK))})
      on conflict (mail_id) do nothing`.execute(db);
  }
}

function eventMailOf(row: EventColumns, isDelete: boolean): EventMail {
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
async function listEnvelopeRecipients(db: DbOrTrx, ids: number[]): Promise<Map<number, EventRecipient[]>> {
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

/** What a move returns: the whole row (`returnRows`), what its application events need, or the id alone. */
function returningColumns(returning: { rows: boolean; events: boolean }): RawBuilder<unknown> {
  const columns: RawBuilder<unknown>[] = (returning.rows ? MAIL_COLUMNS : returning.events ? EVENT_COLUMNS : ['id']).map((column) =>
    sql.ref(`mails.${column}`),
  );
  // The key's name per moved row (a primary-key lookup), instead of a cache that a revocation or another
  // store could make wrong.
  if (returning.events) columns.push(sql`(select api_keys.name from api_keys where api_keys.id = mails.api_key_id) as application_name`);
  return sql.join(columns);
}

async function deleteFrom(
  db: DbOrTrx,
  from: MailStatusCode,
  chunk: Array<{ id: number }>,
  returning: { rows: boolean; events: boolean },
): Promise<Array<{ id: number }>> {
  const ids = chunk.map((t) => t.id);
  // Queued and Processing are one stored status, told apart by the lease (mail/leases.ts); the queue row goes
  // with the mail (ON DELETE CASCADE).
  const leased =
    from === MailStatus.Processing
      ? sql` and id in (${LEASED_IDS})`
      : from === MailStatus.Queued
        ? sql` and id not in (${LEASED_IDS})`
        : sql``;
  const deleted = await sql<{ id: number }>`
    delete from mails where id in (${sql.join(ids)}) and status = ${sql.lit(storedStatusOf(from))}${leased}
    returning ${returningColumns(returning)}`.execute(db);
  return deleted.rows;
}

/**
 * One UPDATE joined to a VALUES list: each mail gets its own target status and values. Columns that only
 * some transitions of the group set fall back to the stored value (coalesce), so a group commit of mixed
 * outcomes (sent, retry, gave up) stays one statement. The casts give PostgreSQL the VALUES columns' types;
 * UPDATE … FROM runs on both engines (SQLite ≥ 3.33).
 */
async function updateFrom(
  db: DbOrTrx,
  from: MailStatusCode,
  chunk: StatusTransition[],
  returning: { rows: boolean; events: boolean },
  eventTypes: ReadonlyMap<number, ApplicationEventType>,
): Promise<Array<{ id: number }>> {
  const first = chunk[0]!;
  const columns: Array<{ name: string; type: 'bigint' | 'integer' | 'text'; value: (t: StatusTransition) => unknown }> = [
    { name: 'id', type: 'bigint', value: (t) => t.id },
    { name: 'status', type: 'integer', value: (t) => storedStatusOf(t.to) },
    { name: 'at', type: 'bigint', value: (t) => t.at },
  ];
  // Never before the mail's receipt (migration 017: the list's date range sorted by last update relies on it).
  const later = engineOf(db) === 'postgres' ? sql`greatest(v.at, mails.received_at)` : sql`max(v.at, mails.received_at)`;
  const assignments: RawBuilder<unknown>[] = [sql`status = v.status`, sql`last_update_at = ${later}`];
  const optional = (name: string, column: string, type: 'bigint' | 'integer' | 'text', value: (t: StatusTransition) => unknown) => {
    if (!chunk.some((t) => value(t) !== undefined)) return;
    columns.push({ name, type, value: (t) => value(t) ?? null });
    assignments.push(sql`${sql.ref(column)} = coalesce(${sql.ref(`v.${name}`)}, ${sql.ref(`mails.${column}`)})`);
  };
  optional('reply', 'provider_reply', 'text', (t) => t.set?.providerReply);
  if (chunk.some((t) => t.set?.nextAttemptAt !== undefined)) {
    // Never due before its scheduled send (migration 026): a requeue of a mail whose schedule Dequeue cancelled
    // restores it (docs/api.md#scheduled-sends). A retry is always later than the send it retries.
    columns.push({ name: 'next_at', type: 'bigint', value: (t) => t.set?.nextAttemptAt ?? null });
    const laterOf = engineOf(db) === 'postgres' ? sql`greatest` : sql`max`;
    assignments.push(sql`next_attempt_at = ${laterOf}(coalesce(v.next_at, mails.next_attempt_at), coalesce(mails.send_at, 0))`);
  }
  optional('sent_at', 'provider_sent_at', 'bigint', (t) => t.set?.providerSentAt);
  optional('rejected', 'rejected_recipients', 'integer', (t) => t.set?.rejectedRecipients);
  if (first.set?.attempts === 'increment') assignments.push(sql`attempts = mails.attempts + 1`);
  else optional('attempts', 'attempts', 'integer', (t) => t.set?.attempts);
  // The mail's event counter moves in the same UPDATE as its status: the sequence needs no read, and two
  // moves of one mail serialise on its row.
  if (returning.events) {
    columns.push({ name: 'ev', type: 'integer', value: (t) => (eventTypes.has(t.id) ? 1 : 0) });
    assignments.push(sql`event_seq = mails.event_seq + v.ev`);
  }
  // A lease lives in the queue (moveInQueue): the record holds none.
  // SQLite's planner does not know how many rows json_each gives (below): left to choose, it may read every
  // mail of the from-status through a status index and probe the JSON for each. The unary `+` takes the status
  // term out of index use (SQLite's documented way), so the only way to the mails is their primary key.
  const status = engineOf(db) === 'postgres' ? sql`mails.status` : sql`+mails.status`;
  // The lease conditions were the queue's (moveInQueue), checked before this UPDATE in the same transaction.
  const conditions: RawBuilder<unknown>[] = [sql`mails.id = v.id`, sql`${status} = ${sql.lit(from)}`];
  // A requeue needs the message it will send: refused, in this UPDATE, once content retention removed it.
  if (first.withContent) conditions.push(sql`mails.content_removed_at is null`);
  const names = sql.join(columns.map((c) => sql.ref(c.name)));
  if (engineOf(db) === 'postgres') {
    // One array per column, joined through `unnest`: the text depends on the group's shape only, not on its
    // size, so the server parses and plans it once per connection (`PREPARED`) and Kysely compiles a dozen
    // parameters instead of one per value. As a VALUES list (below) a worker's flush of 50 outcomes was a new
    // text of ~450 parameters every time. The plan joins by primary key whatever the row count.
    const arrays = columns.map((c) => sql`${chunk.map((t) => c.value(t) ?? null)}::${sql.raw(c.type)}[]`);
    const updated = await sql<{ id: number }>`${sql.raw(PREPARED)}
      update mails set ${sql.join(assignments, sql`, `)}
      from unnest(${sql.join(arrays)}) as v (${names})
      where ${sql.join(conditions, sql` and `)}
      returning ${returningColumns(returning)}`.execute(db);
    return updated.rows;
  }
  // The same idea on SQLite: the group's values as one JSON array of rows, read by `json_each`, so the text
  // depends on the shape only (prepared once, store/connection.ts) and Kysely compiles one parameter instead
  // of a VALUES list of ~300.
  const rows = JSON.stringify(chunk.map((t) => columns.map((c) => c.value(t) ?? null)));
  const cells = columns.map((c, i) => sql`cast(value ->> ${sql.lit(i)} as ${sql.raw(c.type)})`);
  // Qualified names (the FROM has v.id too); SQLite's RETURNING refuses `mails.*`.
  const updated = await sql<{ id: number }>`
    with v (${names}) as (select ${sql.join(cells)} from json_each(${rows}))
    update mails set ${sql.join(assignments, sql`, `)}
    from v
    where ${sql.join(conditions, sql` and `)}
    returning ${returningColumns(returning)}`.execute(db);
  return updated.rows;
}

export interface NewEvent {
  mailId: number;
  at: number;
  actor: string;
  type: MailEventType;
  fromStatus: number | null;
  toStatus: number | null;
  detail?: Record<string, unknown> | undefined;
}

async function insertEvents(db: DbOrTrx, events: NewEvent[], writes: StatementBatch | undefined): Promise<void> {
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
