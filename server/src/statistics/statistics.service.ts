/**
 * The statistics of `GET /api/v1/stats` (docs/api.md#statistics-get-apiv1stats) and their retention. The counters
 * are written by the one writer with the change they count (statistics-moves.ts, mail/write/apply.ts); this reads
 * one row per hour of one application (or of all together), so a 30-day range is 720 rows whatever the number of
 * mails or applications, summed by the store into the range's buckets, and turns those into the answer's buckets,
 * totals, latency percentiles and the rates the alert rules use.
 */
import {
  type ApplicationStatisticsQuery,
  type ApplicationStatisticsResponse,
  LATENCY_BUCKET_BOUNDS_MS,
  LATENCY_BUCKET_COUNT,
  STATISTICS_MAX_RANGE_DAYS,
  type Statistics,
  type StatisticsBucket,
  type StatisticsCounter,
  type StatisticsLatency,
  type StatisticsQuery,
  type StatisticsRates,
} from '@outbox/contract';
import { bounceRate, complaintRate, failureRate } from '../alerts/rates.js';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import type { Store } from '../store/connection.js';
import { ALL_APPLICATIONS, HOUR_MS, NO_APPLICATION } from './statistics-moves.js';
import {
  COUNTER_INDEX,
  deleteStatisticsBefore,
  findApplicationName,
  LATENCY_OFFSET,
  listApplicationSums,
  listStatisticsBuckets,
} from './statistics.repository.js';

const DAY_MS = 24 * HOUR_MS;
/** Statistics are kept this many calendar months, whatever RETENTION_DAYS says. */
export const STATISTICS_RETENTION_MONTHS = 13;

/** Who asks: an operator (every application), or an API key (its own only). */
export type StatisticsReader = { kind: 'operator' } | { kind: 'application'; apiKeyId: number };

type Counts = Record<StatisticsCounter, number>;

/** The eight counters of summed values (counters first, as the repository gives them); written out, as it runs per bucket. */
const countsOf = (values: readonly number[]): Counts => ({
  accepted: values[COUNTER_INDEX.accepted]!,
  sent: values[COUNTER_INDEX.sent]!,
  deferred: values[COUNTER_INDEX.deferred]!,
  failed: values[COUNTER_INDEX.failed]!,
  bounced: values[COUNTER_INDEX.bounced]!,
  complained: values[COUNTER_INDEX.complained]!,
  suppressed: values[COUNTER_INDEX.suppressed]!,
  dequeued: values[COUNTER_INDEX.dequeued]!,
});

/** The rank `q * total` read in the histogram at values[offset…]: see latencyPercentile. */
function percentileAt(values: readonly number[], offset: number, total: number, q: number): number | null {
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < LATENCY_BUCKET_COUNT; i++) {
    const n = values[offset + i]!;
    if (n > 0 && below + n >= rank) {
      const lower = i === 0 ? 0 : LATENCY_BUCKET_BOUNDS_MS[i - 1]!;
      const upper = LATENCY_BUCKET_BOUNDS_MS[i];
      if (upper === undefined) return lower;
      return Math.round(lower + ((upper - lower) * (rank - below)) / n);
    }
    below += n;
  }
  return null;
}

/**
 * The latency below which a share `q` of the histogram's mails fall: the bucket holding that rank, read linearly
 * between its bounds (as Prometheus's histogram_quantile does); the bucket beyond the last bound answers its lower
 * bound. null for an empty histogram. Exported for its unit test.
 */
export function latencyPercentile(histogram: readonly number[], q: number): number | null {
  const total = histogram.reduce((a, b) => a + b, 0);
  return total === 0 ? null : percentileAt(histogram, 0, total, q);
}

const NO_LATENCY: StatisticsLatency = { count: 0, p50Ms: null, p95Ms: null };

/** The latency of the histogram at values[offset…] (a bucket's values or the totals, read in place). */
function latencyOf(values: readonly number[], offset: number): StatisticsLatency {
  let count = 0;
  for (let i = 0; i < LATENCY_BUCKET_COUNT; i++) count += values[offset + i]!;
  if (count === 0) return NO_LATENCY;
  return { count, p50Ms: percentileAt(values, offset, count, 0.5), p95Ms: percentileAt(values, offset, count, 0.95) };
}

/** The rates of the alert rules (alerts/rates.ts), from the counters. */
function ratesOf(counts: Counts): StatisticsRates {
  return {
    bounce: bounceRate(counts.bounced + counts.complained, counts.sent),
    complaint: complaintRate(counts.complained, counts.sent),
    failure: failureRate(counts.failed, counts.sent),
  };
}

/** One bucket of the answer from its values (counters, then the histogram), as one literal: it runs 720 times for 30 days of hours. */
function bucketOf(start: number, values: readonly number[]): StatisticsBucket {
  const counts = countsOf(values);
  return {
    start: new Date(start).toISOString(),
    accepted: counts.accepted,
    sent: counts.sent,
    deferred: counts.deferred,
    failed: counts.failed,
    bounced: counts.bounced,
    complained: counts.complained,
    suppressed: counts.suppressed,
    dequeued: counts.dequeued,
    latency: latencyOf(values, LATENCY_OFFSET),
    rates: ratesOf(counts),
  };
}

/** Parses an ISO instant the schema let through (format date-time); NaN never reaches here, but is refused anyway. */
function instantOf(value: string, field: string): number {
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) throw badRequest('invalid_request', `query.${field} must be an ISO 8601 date-time`);
  return ms;
}

/** The range of a query, checked (400 naming the field), rounded out to whole buckets of `size`. */
function rangeOf(query: { from: string; to: string }, size: number): { start: number; end: number } {
  const from = instantOf(query.from, 'from');
  const to = instantOf(query.to, 'to');
  if (to <= from) throw badRequest('invalid_date_range', 'query.to must be after query.from');
  if (to - from > STATISTICS_MAX_RANGE_DAYS * DAY_MS)
    throw badRequest('invalid_date_range', `query.to must be at most ${STATISTICS_MAX_RANGE_DAYS} days after query.from`);
  return { start: Math.floor(from / size) * size, end: Math.ceil(to / size) * size };
}

/** A range's totals from its summed values (counters, then the histogram). */
function totalsOf(values: readonly number[]): Statistics['totals'] {
  const counts = countsOf(values);
  return {
    ...counts,
    latency: latencyOf(values, LATENCY_OFFSET),
    rates: ratesOf(counts),
    latencyHistogram: values.slice(LATENCY_OFFSET).map((count, i) => ({ upToMs: LATENCY_BUCKET_BOUNDS_MS[i] ?? null, count })),
  };
}

/** The first hour kept: 13 calendar months before `now` (UTC), at an hour's start. */
export function statisticsCutoff(now: number): number {
  const date = new Date(now);
  const day = date.getUTCDate();
  // The same day of the month 13 months back, or that month's last day (31 March → 28 February, not 3 March).
  date.setUTCDate(1);
  date.setUTCMonth(date.getUTCMonth() - STATISTICS_RETENTION_MONTHS);
  date.setUTCDate(Math.min(day, new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate()));
  return Math.floor(date.getTime() / HOUR_MS) * HOUR_MS;
}

export function createStatisticsService({ store, clock }: { store: Store; clock: Clock }) {
  /** Which row set a reader may read for `application` (the query's), and its id and name for the answer. */
  async function applicationOf(
    application: string | undefined,
    reader: StatisticsReader,
  ): Promise<{ rowId: number; shown: Statistics['application'] }> {
    const asked = application === undefined ? undefined : application === 'none' ? NO_APPLICATION : Number(application);
    if (reader.kind === 'application') {
      // Another application's statistics are as unknown to an API key as its mails are (404, not 403).
      if (asked !== undefined && asked !== reader.apiKeyId)
        throw notFound('application_not_found', `query.application: no application ${application} among this API key's`);
      return {
        rowId: reader.apiKeyId,
        shown: { id: reader.apiKeyId, name: (await findApplicationName(store.db, reader.apiKeyId)) ?? null },
      };
    }
    if (asked === undefined) return { rowId: ALL_APPLICATIONS, shown: null };
    if (asked === NO_APPLICATION) return { rowId: NO_APPLICATION, shown: { id: null, name: null } };
    const name = await findApplicationName(store.db, asked);
    if (name === undefined) throw notFound('application_not_found', `query.application: no application (API key) has the id ${asked}`);
    return { rowId: asked, shown: { id: asked, name } };
  }

  async function readStatistics(query: StatisticsQuery, reader: StatisticsReader): Promise<Statistics> {
    const bucket = query.bucket ?? 'hour';
    const size = bucket === 'day' ? DAY_MS : HOUR_MS;
    const { start, end } = rangeOf(query, size);
    const { rowId, shown } = await applicationOf(query.application, reader);
    const rows = await listStatisticsBuckets(store.db, rowId, start, end, size);

    // The store summed each bucket's hours: a bucket is one row, or none when nothing was counted in it.
    const width = LATENCY_OFFSET + LATENCY_BUCKET_COUNT;
    const empty = new Array<number>(width).fill(0);
    const total = new Array<number>(width).fill(0);
    const buckets: Statistics['buckets'] = [];
    let next = 0;
    for (let at = start; at < end; at += size) {
      let values = empty;
      if (next < rows.length && rows[next]!.start < at + size) {
        values = rows[next++]!.values;
        for (let i = 0; i < width; i++) total[i]! += values[i]!;
      }
      buckets.push(bucketOf(at, values));
    }
    return {
      from: new Date(start).toISOString(),
      to: new Date(end).toISOString(),
      bucket,
      application: shown,
      buckets,
      totals: totalsOf(total),
    };
  }

  /** Each application's totals over the range (operators; the console's applications table), most accepted first. */
  async function readApplicationStatistics(query: ApplicationStatisticsQuery): Promise<ApplicationStatisticsResponse> {
    const { start, end } = rangeOf(query, HOUR_MS);
    const sums = await listApplicationSums(store.db, start, end);
    const data = sums.map(({ applicationId, name, values }) => ({
      application: applicationId === NO_APPLICATION ? { id: null, name: null } : { id: applicationId, name },
      totals: totalsOf(values),
    }));
    data.sort((a, b) => b.totals.accepted - a.totals.accepted || (a.application.id ?? 0) - (b.application.id ?? 0));
    return { data, meta: { from: new Date(start).toISOString(), to: new Date(end).toISOString() } };
  }

  /** Retention: hours older than 13 months go (main.ts's hourly purge); never with the mails. Returns the rows deleted. */
  function purgeStatistics(): Promise<number> {
    return deleteStatisticsBefore(store.db, statisticsCutoff(clock.now()));
  }

  return { readStatistics, readApplicationStatistics, purgeStatistics };
}

export type StatisticsService = ReturnType<typeof createStatisticsService>;
