/**
 * The record's side of the single writer's moves (apply.ts): one conditional UPDATE (or DELETE) of `mails` per group
 * of transitions of the same shape, from the status the mails are stored in, returning what the caller asked for.
 */
import { sql, type RawBuilder } from 'kysely';
import { MailStatus, type ApplicationEventType, type MailStatusCode } from '@outbox/contract';
import { PREPARED, type DbOrTrx } from '../../store/connection.js';
import { engineOf } from '../../store/statement-batch.js';
import { LEASED_IDS } from '../leases.js';
import type { StatusTransition } from '../transition-types.js';
import { EVENT_COLUMNS, MAIL_COLUMNS } from './columns.js';

/** Extra RETURNING columns of a move that writes an application event. */
export interface EventColumns {
  id: number;
  event_seq: number;
  message_id: string;
  subject: string;
  idempotency_key: string | null;
  api_key_id: number | null;
  received_at: number;
  application_name: string | null;
}

/** The status a record stores for a status as shown: a leased (Processing) mail's record stays Queued. */
export function storedStatusOf(status: MailStatusCode): MailStatusCode {
  return status === MailStatus.Processing ? MailStatus.Queued : status;
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

export async function deleteFrom(
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
export async function updateFrom(
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
