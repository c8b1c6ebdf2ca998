/**
 * The one place a mail changes status. A transition is a conditional UPDATE (or DELETE) that only happens
 * while the mail is in one of the statuses it may leave, its event row, and the move of the status
 * counters, all in the caller's transaction. Every writer goes through `applyTransitions`: submissions and
 * demo data (created), the operator's actions (dequeue, requeue, delete, purge), the worker (claims,
 * outcomes, retries, lease sweeps, release at stop).
 *
 * Speed: transitions of the same shape (same from-status, same kind of change) are applied by one UPDATE
 * joined to a VALUES list per 500 mails, never one statement per mail, so a worker's group commit of 50
 * outcomes is one UPDATE, one INSERT of events and one counter move, whatever the outcomes were.
 *
 * Longer than ~250 lines on purpose: the SQL of every kind of move, with the conditions that make it safe
 * (from-status, lease) and the counter rules, is read in one place. The types are transition.ts.
 */
import { sql, type RawBuilder } from 'kysely';
import { isStatusCode, type MailEventType, type MailStatusCode } from '@outbox/contract';
import type { DbOrTrx } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import type { ApplyOptions, AppliedTransitions, DeleteTransition, StatusTransition, Transition } from './transition.js';

export type * from './transition.js';

/** Every column of a mail row, for RETURNING; the check below fails to compile when one is missing. */
const MAIL_COLUMNS = [
  'id',
  'message_id',
  'from_name',
  'from_mail',
  'subject',
  'status',
  'search_text',
  'received_at',
  'last_update_at',
  'provider_sent_at',
  'next_attempt_at',
  'attempts',
  'lease_owner',
  'lease_expires_at',
  'provider_reply',
  'api_key_id',
  'idempotency_key',
  'first_to_mail',
  'recipient_count',
  'rejected_recipients',
  'event_seq',
] as const satisfies ReadonlyArray<keyof MailRow>;
const hasEveryColumn: Exclude<keyof MailRow, (typeof MAIL_COLUMNS)[number]> extends never ? true : never = true;
void hasEveryColumn;

/** Rows per statement: bounded so that no statement exceeds either engine's bound-parameter limit. */
const CHUNK = 500;

/**
 * Applies the transitions in the caller's transaction and returns which mails moved. Ids must be distinct.
 * Make it the last write of the transaction: the counters it moves are a hot spot (see adjustStatusCounts).
 */
export async function applyTransitions(
  db: DbOrTrx,
  transitions: readonly Transition[],
  options: ApplyOptions = {},
): Promise<AppliedTransitions> {
  const result: AppliedTransitions = { moved: [], missed: [], rows: new Map() };
  if (transitions.length === 0) return result;
  if (new Set(transitions.map((t) => t.id)).size !== transitions.length) throw new RangeError('applyTransitions: duplicate mail ids');

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
    const key = `${status}|${shapeOf(t)}`;
    const group = groups.get(key);
    if (group) group.transitions.push(t);
    else groups.set(key, { from: status, transitions: [t] });
  }

  const movedIds = new Set<number>(transitions.filter((t) => t.from === null).map((t) => t.id));
  for (const { from, transitions: group } of groups.values()) {
    for (let start = 0; start < group.length; start += CHUNK) {
      const chunk = group.slice(start, start + CHUNK);
      const rows =
        chunk[0]!.to === 'deleted'
          ? await deleteFrom(db, from, chunk, options.returnRows === true)
          : await updateFrom(db, from, chunk as StatusTransition[], options.returnRows === true);
      for (const row of rows) {
        const id = Number(row.id);
        movedIds.add(id);
        if (options.returnRows) result.rows.set(id, row as MailRow);
      }
    }
  }

  const events: NewEvent[] = [];
  const deltas = new Map<number, number>();
  const move = (status: number, delta: number) => deltas.set(status, (deltas.get(status) ?? 0) + delta);
  for (const t of transitions) {
    if (!movedIds.has(t.id)) {
      result.missed.push(t.id);
      continue;
    }
    const from = fromOf.get(t.id) ?? null;
    result.moved.push({ id: t.id, from, to: t.to });
    if (from !== null) move(from, -1);
    if (t.to !== 'deleted') {
      move(t.to, 1);
      if (t.event) events.push({ mailId: t.id, at: t.at, ...t.event, fromStatus: from, toStatus: t.to });
    }
  }
  await insertEvents(db, events);
  await adjustStatusCounts(db, deltas);
  return result;
}

/** What decides the SQL of a transition: transitions of the same shape (and from-status) share a statement. */
function shapeOf(t: StatusTransition | DeleteTransition): string {
  if (t.to === 'deleted') return 'delete';
  const lease = t.set?.lease === undefined ? 'keep' : t.set.lease === null ? 'clear' : 'set';
  const attempts = t.set?.attempts === 'increment' ? 'increment' : 'value';
  const guard = [t.lease?.owner !== undefined, t.lease?.expiresAt !== undefined, t.lease?.expiredBy !== undefined].map(Number).join('');
  return `update|${lease}|${attempts}|${guard}`;
}

/** Current status per id; ids with no mail are left out. */
export async function findStatuses(db: DbOrTrx, ids: number[]): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  for (let start = 0; start < ids.length; start += CHUNK) {
    const rows = await db
      .selectFrom('mails')
      .select(['id', 'status'])
      .where('id', 'in', ids.slice(start, start + CHUNK))
      .execute();
    for (const row of rows) statuses.set(row.id, row.status);
  }
  return statuses;
}

function deleteFrom(db: DbOrTrx, from: MailStatusCode, chunk: Array<{ id: number }>, returnRows: boolean) {
  const query = db
    .deleteFrom('mails')
    .where(
      'id',
      'in',
      chunk.map((t) => t.id),
    )
    .where('status', '=', from);
  return returnRows ? query.returningAll().execute() : query.returning('id').execute();
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
  returnRows: boolean,
): Promise<Array<{ id: number }>> {
  const first = chunk[0]!;
  const columns: Array<{ name: string; type: 'bigint' | 'integer' | 'text'; value: (t: StatusTransition) => unknown }> = [
    { name: 'id', type: 'bigint', value: (t) => t.id },
    { name: 'status', type: 'integer', value: (t) => t.to },
    { name: 'at', type: 'bigint', value: (t) => t.at },
  ];
  const assignments: RawBuilder<unknown>[] = [sql`status = v.status`, sql`last_update_at = v.at`];
  const optional = (name: string, column: string, type: 'bigint' | 'integer' | 'text', value: (t: StatusTransition) => unknown) => {
    if (!chunk.some((t) => value(t) !== undefined)) return;
    columns.push({ name, type, value: (t) => value(t) ?? null });
    assignments.push(sql`${sql.ref(column)} = coalesce(${sql.ref(`v.${name}`)}, ${sql.ref(`mails.${column}`)})`);
  };
  optional('reply', 'provider_reply', 'text', (t) => t.set?.providerReply);
  optional('next_at', 'next_attempt_at', 'bigint', (t) => t.set?.nextAttemptAt);
  optional('sent_at', 'provider_sent_at', 'bigint', (t) => t.set?.providerSentAt);
  optional('rejected', 'rejected_recipients', 'integer', (t) => t.set?.rejectedRecipients);
  if (first.set?.attempts === 'increment') assignments.push(sql`attempts = mails.attempts + 1`);
  else optional('attempts', 'attempts', 'integer', (t) => t.set?.attempts);
  if (first.set?.lease === null) assignments.push(sql`lease_owner = null`, sql`lease_expires_at = null`);
  else if (first.set?.lease !== undefined) {
    columns.push({ name: 'owner', type: 'text', value: (t) => t.set?.lease?.owner ?? null });
    columns.push({ name: 'expires', type: 'bigint', value: (t) => t.set?.lease?.expiresAt ?? null });
    assignments.push(sql`lease_owner = v.owner`, sql`lease_expires_at = v.expires`);
  }
  const conditions: RawBuilder<unknown>[] = [sql`mails.id = v.id`, sql`mails.status = ${sql.lit(from)}`];
  if (first.lease?.owner !== undefined) {
    columns.push({ name: 'held_by', type: 'text', value: (t) => t.lease?.owner });
    conditions.push(sql`mails.lease_owner = v.held_by`);
  }
  if (first.lease?.expiresAt !== undefined) {
    columns.push({ name: 'held_until', type: 'bigint', value: (t) => t.lease?.expiresAt });
    conditions.push(sql`mails.lease_expires_at = v.held_until`);
  }
  if (first.lease?.expiredBy !== undefined) {
    columns.push({ name: 'expired_by', type: 'bigint', value: (t) => t.lease?.expiredBy });
    conditions.push(sql`mails.lease_expires_at <= v.expired_by`);
  }
  const values = chunk.map(
    (t) =>
      sql`(${sql.join(
        columns.map((c) => sql`cast(${c.value(t)} as ${sql.raw(c.type)})`),
        sql`, `,
      )})`,
  );
  const names = sql.join(columns.map((c) => sql.ref(c.name)));
  // Qualified names (the FROM has v.id too); SQLite's RETURNING refuses `mails.*`.
  const returning = sql.join((returnRows ? MAIL_COLUMNS : ['id']).map((column) => sql.ref(`mails.${column}`)));
  const updated = await sql<{ id: number }>`
    with v (${names}) as (values ${sql.join(values)})
    update mails set ${sql.join(assignments, sql`, `)}
    from v
    where ${sql.join(conditions, sql` and `)}
    returning ${returning}`.execute(db);
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

async function insertEvents(db: DbOrTrx, events: NewEvent[]): Promise<void> {
  for (let start = 0; start < events.length; start += CHUNK) {
    await db
      .insertInto('mail_events')
      .values(
        events.slice(start, start + CHUNK).map((e) => ({
          mail_id: e.mailId,
          at: e.at,
          actor: e.actor,
          type: e.type,
          from_status: e.fromStatus,
          to_status: e.toStatus,
          detail: e.detail ? JSON.stringify(e.detail) : null,
        })),
      )
      .execute();
  }
}

/**
 * Moves the status counters. Every writer on PostgreSQL locks these few rows, so two rules keep them from
 * becoming the bottleneck: rows are always locked in status order (two transactions taking them in
 * opposite orders deadlock, and the loser's outcomes would wait for a lease expiry), and this is the last
 * statement of the transition, so a row stays locked only for the commit.
 */
async function adjustStatusCounts(db: DbOrTrx, deltas: Map<number, number>): Promise<void> {
  for (const [status, delta] of [...deltas].sort(([a], [b]) => a - b)) {
    if (delta === 0) continue;
    await db
      .updateTable('status_counts')
      .set((eb) => ({ count: eb('count', '+', delta) }))
      .where('status', '=', status)
      .execute();
  }
}
