/** Statistics for benchmarks: hourly counters as a busy store holds them, written through the product's own upsert. */
import { STATISTICS_COUNTERS } from '@outbox/contract';
import {
  ALL_APPLICATIONS,
  countStatistic,
  createStatisticsMoves,
  HOUR_MS,
  latencyBucketOf,
} from '../../server/src/statistics/statistics-moves.js';
import { writeStatistics } from '../../server/src/statistics/statistics.repository.js';
import type { Store } from '../../server/src/store/connection.js';

/** Fills the hours of [from, to) for `apps` applications: random counts, a few latency buckets, as a busy day would. */
export async function fillCounters(store: Store, apiKeyIds: number[], from: number, to: number): Promise<number> {
  let rows = 0;
  let seed = 1;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  // Ten hours of every application per statement (~1,000 rows: under SQLite's 32,766 parameters).
  for (let first = from; first < to; first += 10 * HOUR_MS) {
    const moves = createStatisticsMoves();
    for (let hour = first; hour < Math.min(to, first + 10 * HOUR_MS); hour += HOUR_MS) {
      // One count each through the product's functions (the keys and the row of all), the figures set directly.
      for (const id of apiKeyIds) countStatistic(moves, 'sent', id, hour);
      for (const move of moves.values()) {
        if (move.hour !== hour || move.applicationId < 0) continue;
        const sent = 1 + Math.floor(random() * 200);
        Object.assign(move.counters, { accepted: sent, sent, failed: random() < 0.3 ? 1 : 0, bounced: random() < 0.2 ? 1 : 0 });
        for (let i = 0; i < 5; i++) move.latency[latencyBucketOf(random() * 10_000)]! += 1;
      }
      // The row of all applications is their sum, as the writer keeps it.
      const all = moves.get(`${ALL_APPLICATIONS}:${hour}`)!;
      for (const counter of STATISTICS_COUNTERS) all.counters[counter] = 0;
      for (const move of moves.values()) {
        if (move.hour !== hour || move === all) continue;
        for (const counter of STATISTICS_COUNTERS) all.counters[counter] += move.counters[counter];
        move.latency.forEach((n, i) => (all.latency[i]! += n));
      }
    }
    rows += moves.size;
    await store.db.transaction().execute((trx) => writeStatistics(trx, moves));
  }
  return rows;
}
