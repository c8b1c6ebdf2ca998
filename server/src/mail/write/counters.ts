/**
 * The status counters (`status_counts`): moved with every change of a stored status, in the same transaction, and
 * rebuilt after an import. Part of the single writer (apply.ts).
 */
import { sql } from 'kysely';
import { type DbOrTrx } from '../../store/connection.js';
import { engineOf, type StatementBatch } from '../../store/statement-batch.js';
import type { StatusCountMoves } from '../transition-types.js';

export function addMove(counts: StatusCountMoves, status: number, delta: number): void {
  counts.set(status, (counts.get(status) ?? 0) + delta);
}

/** Sets every status counter to a fresh count of the rows (after an import); one grouped read, six updates. */
export async function rebuildStatusCounts(db: DbOrTrx): Promise<void> {
  const byStatus = await db
    .selectFrom('mails')
    .select(['status', (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('status')
    .execute();
  const counts = new Map(byStatus.map((r) => [r.status, Number(r.n)]));
  for (const status of [0, 1, 2, 3, 4, 5])
    await db
      .updateTable('status_counts')
      .set({ count: counts.get(status) ?? 0 })
      .where('status', '=', status)
      .execute();
}

/**
 * Moves the status counters. Every writer on PostgreSQL locks these few rows, so two rules keep them from
 * becoming the bottleneck: rows are always locked in status order (two transactions taking them in
 * opposite orders deadlock, and the loser's outcomes would wait for a lease expiry), and this is the last
 * statement of the transition, so a row stays locked only for the commit.
 */
export async function moveStatusCounts(db: DbOrTrx, deltas: StatusCountMoves, writes?: StatementBatch): Promise<void> {
  const moves = [...deltas].filter(([, delta]) => delta !== 0).sort(([a], [b]) => a - b);
  const moveOf = ([status, delta]: [number, number]) =>
    db
      .updateTable('status_counts')
      .set((eb) => ({ count: eb('count', '+', delta) }))
      .where('status', '=', status);
  // One row may join the batch's statement; several must be locked in order, which a plain UPDATE does not keep.
  if (writes && moves.length === 1) return writes.add(moveOf(moves[0]!));
  await writes?.flush();
  if (moves.length > 1 && engineOf(db) === 'postgres') {
    // One round trip: the CTE locks the rows sorted by status (its LockRows sits above the sort), and the
    // UPDATE changes only rows it has locked. SQLite has one writer and no round trips: one UPDATE per row.
    const statuses = moves.map(([status]) => status);
    const deltas = moves.map(([, delta]) => delta);
    await sql`
      with locked as (select status from status_counts where status = any(${statuses}::int[]) order by status for update),
        v (status, delta) as (select * from unnest(${statuses}::int[], ${deltas}::bigint[]))
      update status_counts set count = status_counts.count + v.delta
      from locked join v on v.status = locked.status
      where status_counts.status = locked.status`.execute(db);
    return;
  }
  for (const move of moves) await moveOf(move).execute();
}
