/**
 * How the queue's leases show in the record (migration 022). A claim writes only `mail_queue`:
 * the mail's stored status stays Queued, and it is Processing exactly while its queue row holds a lease. Every
 * reader of a status goes through here, so the list, the chips and counts, the Processing filter, the drawer,
 * live updates and queue health all show 2 for a leased mail, with the lease's start as its last update and
 * the attempt under way counted (docs/lifecycle.md#processing-is-a-lease).
 *
 * The leased rows are few (at most each worker's concurrency), read through the queue's partial index of
 * leases, so each overlay is one small indexed read.
 */
import { sql, type RawBuilder } from 'kysely';
import { MailStatus } from '@outbox/contract';
import type { DbOrTrx } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';

/** A lease as the drawer shows it. */
export interface LeaseColumns {
  lease_owner: string | null;
  lease_expires_at: number | null;
}

/** A mail's row as it shows: status, last update and attempts with its lease applied, and the lease itself. */
export type MailView = MailRow & LeaseColumns;

/** The ids of the mails under a lease (the queue's partial index of leases). */
export const LEASED_IDS = sql`select mail_id from mail_queue where lease_owner is not null`;

/**
 * Rows as they show: a stored-Queued row whose queue row holds a lease becomes Processing, its last update the
 * lease's start and its attempts the queue's (the claim counted the attempt under way). One read by primary key
 * for the rows stored Queued; none when the page has none.
 */
export async function withLeases<R extends Pick<MailRow, 'id' | 'status' | 'last_update_at' | 'attempts'>>(
  db: DbOrTrx,
  rows: readonly R[],
): Promise<Array<R & LeaseColumns>> {
  const queued = rows.filter((row) => row.status === MailStatus.Queued).map((row) => row.id);
  const leases = new Map<
    number,
    { lease_owner: string | null; lease_expires_at: number | null; leased_at: number | null; attempts: number }
  >();
  for (let start = 0; start < queued.length; start += 900) {
    const found = await db
      .selectFrom('mail_queue')
      .select(['mail_id', 'lease_owner', 'lease_expires_at', 'leased_at', 'attempts'])
      .where('mail_id', 'in', queued.slice(start, start + 900))
      .where('lease_owner', 'is not', null)
      .execute();
    for (const lease of found) leases.set(Number(lease.mail_id), lease);
  }
  return rows.map((row) => {
    const lease = leases.get(row.id);
    if (!lease) return { ...row, lease_owner: null, lease_expires_at: null };
    return {
      ...row,
      status: MailStatus.Processing,
      last_update_at: Math.max(Number(lease.leased_at ?? row.last_update_at), row.last_update_at),
      attempts: Number(lease.attempts),
      lease_owner: lease.lease_owner,
      lease_expires_at: lease.lease_expires_at === null ? null : Number(lease.lease_expires_at),
    };
  });
}

/**
 * A filter on statuses as they show, as one term on `mails` (or the alias given). Processing is a stored Queued
 * mail under a lease, Queued one without; every other status is its stored value. Processing alone is found
 * through the leased ids, with the stored status hidden from its indexes (`status + 0`, on both engines) so that
 * the engine reads those few mails by id instead of walking every Queued one. `fence`: every status hidden so
 * (SQLite's trigram plans, where the candidates drive).
 */
export function statusTerm(statuses: readonly number[], table = 'mails', fence = false): RawBuilder<boolean> {
  const column = sql.ref(`${table}.status`);
  const id = sql.ref(`${table}.id`);
  const hidden = sql`(${column} + 0)`;
  const stored = fence ? hidden : column;
  const others = statuses.filter((s) => s !== MailStatus.Queued && s !== MailStatus.Processing);
  const queued = statuses.includes(MailStatus.Queued);
  const processing = statuses.includes(MailStatus.Processing);
  const terms: RawBuilder<boolean>[] = [];
  if (queued && processing) others.push(MailStatus.Queued);
  if (others.length === 1) terms.push(sql<boolean>`${stored} = ${sql.lit(others[0]!)}`);
  else if (others.length > 1) terms.push(sql<boolean>`${stored} in (${sql.join(others.map((s) => sql.lit(s)))})`);
  if (queued && !processing) terms.push(sql<boolean>`(${stored} = ${sql.lit(MailStatus.Queued)} and ${id} not in (${LEASED_IDS}))`);
  if (processing && !queued) terms.push(sql<boolean>`(${hidden} = ${sql.lit(MailStatus.Queued)} and ${id} in (${LEASED_IDS}))`);
  if (terms.length === 0) return sql<boolean>`1 = 0`;
  return terms.length === 1 ? terms[0]! : sql<boolean>`(${sql.join(terms, sql` or `)})`;
}
