/**
 * The pure parts of the statistics: which latency bucket a send falls in, how a percentile is read from the
 * histogram, how a transaction's moves are gathered and ordered for their one upsert, and where 13 months end.
 */
import { LATENCY_BUCKET_BOUNDS_MS, LATENCY_BUCKET_COUNT } from '@outbox/contract';
import { describe, expect, it } from 'vitest';
import {
  ALL_APPLICATIONS,
  countLatency,
  countStatistic,
  createStatisticsMoves,
  hourOf,
  latencyBucketOf,
  mergeStatisticsMoves,
  NO_APPLICATION,
  sortedStatisticsMoves,
} from '../../src/statistics/statistics-moves.js';
import { latencyPercentile, statisticsCutoff } from '../../src/statistics/statistics.service.js';

const histogramWith = (entries: Record<number, number>) => {
  const histogram = new Array<number>(LATENCY_BUCKET_COUNT).fill(0);
  for (const [bucket, count] of Object.entries(entries)) histogram[Number(bucket)] = count;
  return histogram;
};

describe('latency buckets', () => {
  it('puts a latency in the first bucket whose upper bound holds it, and beyond the last bound in the last', () => {
    expect(latencyBucketOf(0)).toBe(0);
    expect(latencyBucketOf(100)).toBe(0);
    expect(latencyBucketOf(101)).toBe(1);
    expect(latencyBucketOf(3_000)).toBe(5);
    expect(latencyBucketOf(3_600_000)).toBe(13);
    expect(latencyBucketOf(LATENCY_BUCKET_BOUNDS_MS.at(-1)!)).toBe(LATENCY_BUCKET_COUNT - 2);
    expect(latencyBucketOf(LATENCY_BUCKET_BOUNDS_MS.at(-1)! + 1)).toBe(LATENCY_BUCKET_COUNT - 1);
    expect(LATENCY_BUCKET_COUNT).toBe(20); // one column per bucket in migration 024
  });

  it('reads a percentile linearly inside the bucket that holds its rank', () => {
    expect(latencyPercentile(histogramWith({}), 0.5)).toBeNull();
    // Ten mails in (0, 100]: the median is halfway.
    expect(latencyPercentile(histogramWith({ 0: 10 }), 0.5)).toBe(50);
    // 90 fast, 10 slow: p50 among the fast, p95 halfway through the (1 s, 2.5 s] bucket.
    const histogram = histogramWith({ 2: 90, 4: 10 });
    expect(latencyPercentile(histogram, 0.5)).toBe(250 + Math.round((250 * 50) / 90));
    expect(latencyPercentile(histogram, 0.95)).toBe(1_750);
    // The bucket beyond 3 days answers its lower bound.
    expect(latencyPercentile(histogramWith({ 19: 1 }), 0.95)).toBe(LATENCY_BUCKET_BOUNDS_MS.at(-1));
  });
});

describe('moves of a transaction', () => {
  it('adds each count to its application and to the row of all, by UTC hour, and sorts them for the upsert', () => {
    const at = Date.parse('2026-11-23T10:59:59.999Z');
    const moves = createStatisticsMoves();
    countStatistic(moves, 'sent', 7, at);
    countStatistic(moves, 'sent', 7, at);
    countStatistic(moves, 'failed', null, at + 1);
    countLatency(moves, 7, at, 3_000);
    const more = createStatisticsMoves();
    countStatistic(more, 'sent', 3, at);
    mergeStatisticsMoves(moves, more);
    const rows = sortedStatisticsMoves(moves);
    expect(rows.map((r) => [r.applicationId, new Date(r.hour).toISOString()])).toEqual([
      [ALL_APPLICATIONS, '2026-11-23T10:00:00.000Z'],
      [ALL_APPLICATIONS, '2026-11-23T11:00:00.000Z'],
      [NO_APPLICATION, '2026-11-23T11:00:00.000Z'],
      [3, '2026-11-23T10:00:00.000Z'],
      [7, '2026-11-23T10:00:00.000Z'],
    ]);
    expect(rows[0]!.counters.sent).toBe(3);
    expect(rows[0]!.latency[5]).toBe(1);
    expect(rows[1]!.counters.failed).toBe(1);
    expect(rows[4]!.counters).toMatchObject({ sent: 2, failed: 0 });
    expect(hourOf(at)).toBe(Date.parse('2026-11-23T10:00:00Z'));
  });
});

describe('retention', () => {
  it('keeps 13 calendar months, from the start of an hour', () => {
    expect(new Date(statisticsCutoff(Date.parse('2027-12-24T10:30:00Z'))).toISOString()).toBe('2026-11-24T10:00:00.000Z');
    // A day the month 13 months back does not have: its last day.
    expect(new Date(statisticsCutoff(Date.parse('2027-03-31T00:00:00Z'))).toISOString()).toBe('2026-02-28T00:00:00.000Z');
  });
});
