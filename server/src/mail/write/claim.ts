/**
 * The worker's claim and lease renewal: the only writes of the queue that are not a status change of the record
 * (migration 022). A claim leases due waiting rows of `mail_queue` and counts the attempt; the record is not
 * written (mail/leases.ts shows the mail Processing). Part of the single writer (apply.ts).
 */
import { sql, type RawBuilder } from 'kysely';
import { LANE_CODES, MailStatus } from '@outbox/contract';
import { PREPARED, type DbOrTrx, type Engine } from '../../store/connection.js';
import type { MailRow } from '../../store/schema.js';
import { CHUNK, MAIL_COLUMNS } from './columns.js';

/** A worker's claim: up to `limit` mails due by `now`, held by `owner` until `leaseExpiresAt`. */
export interface QueueClaim {
  now: number;
  limit: number;
  owner: string;
  leaseExpiresAt: number;
  /**
   * Slots of this claim kept for the bulk lane while it has due mail, whatever the transactional lane holds
   * (docs/lanes.md); by default BULK_SHARE of `limit`, rounded down. A worker spreads the share over its claims
   * (`createBulkCredit` in delivery/claim-lanes.ts), so a claim of one slot still gives bulk its turn every few claims.
   */
  bulkMinimum?: number | undefined;
}

/** The share of every claim's slots the bulk lane keeps while both lanes have due mail (docs/lanes.md). */
export const BULK_SHARE = 0.2;

const TRANSACTIONAL = LANE_CODES.transactional;
const BULK = LANE_CODES.bulk;

/**
 * Which waiting rows a claim takes: a complete SELECT of `mail_id`, the same policy on both engines (docs/lanes.md).
 *
 * 1. Candidates: for each lane and each application (every API key, and 0 for mail of none), its oldest due waiting
 *    rows, at most `limit`, read from `mail_queue_turns_idx (lane, api_key_id, due_at, mail_id)`: one short index
 *    range per (lane, application), so a million-mail flood of one application costs the claim `limit` rows.
 *    PostgreSQL locks them (FOR UPDATE SKIP LOCKED, per range, as the claim always did): concurrent workers take
 *    disjoint rows without waiting. SQLite has one writer and needs no lock; it has no LATERAL either, so each range
 *    is a correlated `IN (… limit)`.
 * 2. Turns: within a lane the candidates are ranked by their place in their application's line, then by due time:
 *    every application's oldest mail comes before any application's second (round robin).
 * 3. Shares: bulk takes at least `bulkMinimum` slots while it has candidates, and whatever transactional leaves;
 *    transactional takes the rest. So transactional mail is claimed first, and bulk is never starved.
 */
function claimPick(engine: Engine, claim: QueueClaim): RawBuilder<unknown> {
  const limit = Math.max(0, Math.floor(claim.limit));
  const bulkMinimum = Math.min(limit, Math.max(0, Math.floor(claim.bulkMinimum ?? limit * BULK_SHARE)));
  const postgres = engine === 'postgres';
  // SQLite, left to choose, reads the range through the due index (`due_at <= now`, every due row of every
  // application) for each (lane, application): a claim cost grew with the queue (bench/lanes.ts, 100,000 waiting).
  const queueIndex = postgres ? sql`` : sql`indexed by mail_queue_turns_idx`;
  const range = (lane: RawBuilder<unknown>, application: RawBuilder<unknown>) => sql`
    select r.mail_id, r.lane, r.api_key_id, r.due_at from mail_queue r ${queueIndex}
    where r.lease_owner is null and r.lane = ${lane} and r.api_key_id = ${application} and r.due_at <= ${claim.now}
    order by r.due_at, r.mail_id limit ${limit}`;
  const candidates = postgres
    ? sql`select c.mail_id, c.lane, c.due_at, row_number() over (partition by c.lane, c.api_key_id order by c.due_at, c.mail_id) as turn
        from pairs cross join lateral (${range(sql`pairs.lane`, sql`pairs.api_key_id`)} for update of r skip locked) as c`
    : sql`select q.mail_id, q.lane, q.due_at, row_number() over (partition by q.lane, q.api_key_id order by q.due_at, q.mail_id) as turn
        from pairs join mail_queue q on q.mail_id in (select mail_id from (${range(sql`pairs.lane`, sql`pairs.api_key_id`)}))`;
  const least = postgres ? sql`least` : sql`min`;
  const greatest = postgres ? sql`greatest` : sql`max`;
  const int = (value: number) => (postgres ? sql`cast(${value} as integer)` : sql`${value}`);
  return sql`with pairs (lane, api_key_id) as (
      select lanes.lane, applications.id
      from (select ${sql.lit(TRANSACTIONAL)} as lane union all select ${sql.lit(BULK)}) as lanes
      cross join (select id from api_keys union all select 0) as applications
    ), candidates as (${candidates}),
    ranked as (
      select mail_id, lane, row_number() over (partition by lane order by turn, due_at, mail_id) as lane_rank from candidates
    ), share as (
      select ${least}(count(*) filter (where lane = ${sql.lit(BULK)}),
        ${greatest}(${int(bulkMinimum)}, ${int(limit)} - count(*) filter (where lane = ${sql.lit(TRANSACTIONAL)}))) as bulk
      from candidates
    )
    select ranked.mail_id from ranked, share
    where ranked.lane_rank <= case when ranked.lane = ${sql.lit(BULK)} then share.bulk else ${int(limit)} - share.bulk end`;
}

/** A claimed mail's record as it shows under its new lease (Processing, the attempt counted), with the lease. */
export interface ClaimedRow extends MailRow {
  lease_owner: string;
  lease_expires_at: number;
}

/** A claimed mail's row, with what its send needs: the stored bytes and the envelope recipients in order. */
export interface ClaimedMailRow extends ClaimedRow {
  /** Null when no content row exists (the worker then ends the mail in Error). */
  content_raw: Buffer | null;
  content_envelope_from: string | null;
  envelope_addresses: string[];
  envelope_outcomes: Array<string | null>;
}

/**
 * Queued → Processing under a lease for up to `limit` due mails, oldest due first, as ONE PostgreSQL statement
 * that writes only the queue (migration 022): the pick from the partial index of waiting rows `(due_at, mail_id)`
 * (FOR UPDATE SKIP LOCKED, so concurrent workers take disjoint batches without waiting), the conditional UPDATE
 * of those queue rows (the lease, the attempt counted), and the read of each claimed mail's record, stored bytes
 * and envelope recipients, which the worker sends next. The record is not written: it shows Processing through
 * its lease (mail/leases.ts), and the status counters count it Queued until its outcome. The UPDATE finds its rows
 * by primary key through an array (`= any`): joined to the CTE instead, the planner may hash-join a scan of the
 * queue. The text is the same for every claim, so the server parses it once per connection (`PREPARED`,
 * store/connection.ts). SQLite has no data-modifying WITH: `claimDueMailsSqlite`.
 */
export async function claimDueMailsWithPayload(db: DbOrTrx, claim: QueueClaim): Promise<ClaimedMailRow[]> {
  const { rows } = await sql<ClaimedMailRow>`${sql.raw(PREPARED)}
    with due as (${claimPick('postgres', claim)}), claimed as (
      update mail_queue q set lease_owner = ${claim.owner}, lease_expires_at = ${claim.leaseExpiresAt}, leased_at = ${claim.now},
        attempts = q.attempts + 1
      where q.mail_id = any (array(select mail_id from due)) and q.lease_owner is null
      returning q.mail_id, q.due_at, q.attempts, q.lease_owner, q.lease_expires_at, q.leased_at
    )
    select ${sql.join(MAIL_COLUMNS.filter((c) => c !== 'status' && c !== 'attempts' && c !== 'last_update_at').map((column) => sql.ref(`m.${column}`)))},
      ${sql.lit(MailStatus.Processing)} as status, claimed.attempts, greatest(claimed.leased_at, m.last_update_at) as last_update_at,
      claimed.lease_owner, claimed.lease_expires_at,
      c.raw as content_raw, c.envelope_from as content_envelope_from,
      coalesce(r.addresses, '{}') as envelope_addresses, coalesce(r.outcomes, '{}') as envelope_outcomes
    from claimed
    join mails m on m.id = claimed.mail_id
    left join mail_contents c on c.mail_id = claimed.mail_id
    left join lateral (
      select array_agg(address order by position) as addresses, array_agg(outcome order by position) as outcomes
      from mail_recipients where mail_recipients.mail_id = claimed.mail_id and kind = 'envelope'
    ) r on true
    order by m.lane, claimed.due_at, claimed.mail_id`.execute(db);
  return rows;
}

/**
 * SQLite's claim: the same move as one UPDATE of the queue whose subquery picks the due rows from `(due_at,
 * mail_id)` (a text that never changes, prepared once), then one read of the claimed mails' records. SQLite has a
 * single writer, so nothing moves a mail between the pick and the update. Rows in claim order.
 */
export async function claimDueMailsSqlite(db: DbOrTrx, claim: QueueClaim): Promise<ClaimedRow[]> {
  const { rows: leases } = await sql<{ mail_id: number; due_at: number; attempts: number; lane: number }>`
    update mail_queue set lease_owner = ${claim.owner}, lease_expires_at = ${claim.leaseExpiresAt}, leased_at = ${claim.now},
      attempts = attempts + 1
    where lease_owner is null and mail_id in (${claimPick('sqlite', claim)})
    returning mail_id, due_at, attempts, lane`.execute(db);
  if (leases.length === 0) return [];
  leases.sort((a, b) => a.lane - b.lane || a.due_at - b.due_at || a.mail_id - b.mail_id);
  const records = new Map<number, MailRow>();
  for (let start = 0; start < leases.length; start += CHUNK) {
    const found = await db
      .selectFrom('mails')
      .selectAll()
      .where(
        'id',
        'in',
        leases.slice(start, start + CHUNK).map((lease) => lease.mail_id),
      )
      .execute();
    for (const row of found) records.set(row.id, row);
  }
  return leases.flatMap((lease) => {
    const row = records.get(lease.mail_id);
    if (!row) return [];
    return [
      {
        ...row,
        status: MailStatus.Processing,
        attempts: lease.attempts,
        last_update_at: Math.max(claim.now, row.last_update_at),
        lease_owner: claim.owner,
        lease_expires_at: claim.leaseExpiresAt,
      },
    ];
  });
}

/**
 * Moves the leases of mails whose send is still under way to `expiresAt`: a send may outlast its lease (a relay may
 * take ten minutes to answer the end of DATA, RFC 5321 §4.5.3.2.6) while its worker lives, and the sweeper must not
 * hand such a mail to another worker. Conditional on the worker still holding the lease it knows of (owner and
 * expiry), so a lease the sweeper already released stays released. Answers the ids renewed. Not a status change:
 * no event, no counter.
 */
export async function renewLeases(
  db: DbOrTrx,
  owner: string,
  held: ReadonlyArray<{ id: number; heldUntil: number }>,
  expiresAt: number,
): Promise<Set<number>> {
  const renewed = new Set<number>();
  // One statement per mail: renewals are rare (only sends slower than half a lease) and few (≤ the worker's concurrency).
  for (const { id, heldUntil } of held) {
    const result = await db
      .updateTable('mail_queue')
      .set({ lease_expires_at: expiresAt })
      .where('mail_id', '=', id)
      .where('lease_owner', '=', owner)
      .where('lease_expires_at', '=', heldUntil)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) > 0) renewed.add(id);
  }
  return renewed;
}
