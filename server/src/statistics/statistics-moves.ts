/**
 * What a transaction adds to the hourly statistics (migration 024), gathered while the one writer applies its moves
 * (mail/write/apply.ts) and written once, last, by `writeStatistics`: a group commit of 100 outcomes is one upsert of
 * its few (application, hour) rows, not 100. Pure: no SQL here.
 *
 * What counts (docs/api.md#statistics-get-apiv1stats): each application event of a mail, one to one, as the writer
 * appends it (`mail.sent` → sent, `mail.deferred` → deferred, …), except that `accepted` counts every mail a
 * submission stores, including one stored Error at once because every recipient is suppressed (its only event is
 * `mail.suppressed`, which counts suppressed as well). `mail.requeued` and `mail.deleted` are not counted; a purge
 * writes no event and so takes nothing away.
 */
import {
  LATENCY_BUCKET_BOUNDS_MS,
  LATENCY_BUCKET_COUNT,
  STATISTICS_COUNTERS,
  type ApplicationEventType,
  type StatisticsCounter,
} from '@outbox/contract';

/** `application_id` of mails no API key submitted (the console, the demo data, the command line). */
export const NO_APPLICATION = 0;
/** `application_id` of the row of every application together, written with the others. */
export const ALL_APPLICATIONS = -1;
export const HOUR_MS = 3_600_000;

/** One (application, hour) row's increments: the eight counters, then the latency buckets. */
export interface StatisticsMove {
  applicationId: number;
  hour: number;
  counters: Record<StatisticsCounter, number>;
  latency: number[];
}

/** The increments of one transaction, by `${applicationId}:${hour}`. */
export type StatisticsMoves = Map<string, StatisticsMove>;

export function createStatisticsMoves(): StatisticsMoves {
  return new Map();
}

/** The counter an application event adds to; undefined for events that are not counted (see the module comment). */
export const COUNTER_OF_EVENT: Partial<Record<ApplicationEventType, StatisticsCounter>> = {
  'mail.sent': 'sent',
  'mail.deferred': 'deferred',
  'mail.failed': 'failed',
  'mail.bounced': 'bounced',
  'mail.complained': 'complained',
  'mail.suppressed': 'suppressed',
  'mail.dequeued': 'dequeued',
};

/** The first millisecond of the UTC hour of `at`. */
export function hourOf(at: number): number {
  return Math.floor(at / HOUR_MS) * HOUR_MS;
}

/** The histogram bucket of a latency: the first whose upper bound holds it, or the last one beyond every bound. */
export function latencyBucketOf(latencyMs: number): number {
  for (let i = 0; i < LATENCY_BUCKET_BOUNDS_MS.length; i++) if (latencyMs <= LATENCY_BUCKET_BOUNDS_MS[i]!) return i;
  return LATENCY_BUCKET_COUNT - 1;
}

function moveOf(moves: StatisticsMoves, applicationId: number, hour: number): StatisticsMove {
  const key = `${applicationId}:${hour}`;
  let move = moves.get(key);
  if (!move) {
    const counters = Object.fromEntries(STATISTICS_COUNTERS.map((c) => [c, 0])) as Record<StatisticsCounter, number>;
    move = { applicationId, hour, counters, latency: new Array<number>(LATENCY_BUCKET_COUNT).fill(0) };
    moves.set(key, move);
  }
  return move;
}

/** Adds one to `counter` for the mail's application (`apiKeyId`, null: none) and the row of all, in the hour of `at`. */
export function countStatistic(moves: StatisticsMoves, counter: StatisticsCounter, apiKeyId: number | null, at: number): void {
  const hour = hourOf(at);
  moveOf(moves, apiKeyId ?? NO_APPLICATION, hour).counters[counter] += 1;
  moveOf(moves, ALL_APPLICATIONS, hour).counters[counter] += 1;
}

/** Adds a mail's accepted → ProviderSent latency to the histogram of the hour it was sent in. */
export function countLatency(moves: StatisticsMoves, apiKeyId: number | null, sentAt: number, latencyMs: number): void {
  const hour = hourOf(sentAt);
  const bucket = latencyBucketOf(Math.max(0, latencyMs));
  moveOf(moves, apiKeyId ?? NO_APPLICATION, hour).latency[bucket]! += 1;
  moveOf(moves, ALL_APPLICATIONS, hour).latency[bucket]! += 1;
}

/** Adds `from` into `into` (a caller gathering several moves of one transaction). */
export function mergeStatisticsMoves(into: StatisticsMoves, from: StatisticsMoves): void {
  for (const move of from.values()) {
    const target = moveOf(into, move.applicationId, move.hour);
    for (const counter of STATISTICS_COUNTERS) target.counters[counter] += move.counters[counter];
    move.latency.forEach((n, i) => (target.latency[i]! += n));
  }
}

/**
 * The rows to upsert, in (application, hour) order: every writer locks them in that order on PostgreSQL, so two
 * transactions cannot deadlock on them (the row of all applications, -1, comes first).
 */
export function sortedStatisticsMoves(moves: StatisticsMoves): StatisticsMove[] {
  return [...moves.values()].sort((a, b) => a.applicationId - b.applicationId || a.hour - b.hour);
}
