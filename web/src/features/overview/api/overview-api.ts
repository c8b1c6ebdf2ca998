/**
 * The Overview's calls (docs/console.md §10.21): the statistics (docs/api.md#statistics-get-apiv1stats) of every
 * application together, each application's totals (one call), and the alert rules' thresholds (GET /api/v1/alerts)
 * drawn on the rates.
 */
import { queryOptions, type QueryClient } from '@tanstack/react-query';
import type { AlertRuleStatus, Application, ApplicationStatistics, Statistics } from '@outbox/contract';
import { apiJson, isRecord } from '../../../lib/api-client';
import type { StatsRange } from '../components/ranges';

export const overviewKeys = {
  all: ['overview'] as const,
  allStatistics: () => [...overviewKeys.all, 'statistics'] as const,
  statistics: (range: StatsRange, application: number | null) => [...overviewKeys.allStatistics(), range, application] as const,
  allPerApplication: () => [...overviewKeys.all, 'per-application'] as const,
  perApplication: (range: StatsRange) => [...overviewKeys.allPerApplication(), range] as const,
  thresholds: () => [...overviewKeys.all, 'thresholds'] as const,
  applications: () => [...overviewKeys.all, 'applications'] as const,
};

function firstOf<T>(body: unknown, call: string): T {
  if (!isRecord(body) || !Array.isArray(body.data) || body.data.length === 0) throw new Error(`${call}: the answer is not { data: [...] }`);
  return body.data[0] as T;
}

/** GET /api/v1/stats?from&to&bucket[&application] */
export async function fetchStatistics(token: string, range: StatsRange, application: number | null, signal?: AbortSignal) {
  const body = await apiJson('/api/v1/stats', {
    token,
    signal,
    query: { from: range.from, to: range.to, bucket: range.bucket, application: application === null ? null : String(application) },
  });
  return firstOf<Statistics>(body, 'GET /api/v1/stats');
}

/** The alert thresholds the rate charts draw (ratios); null where the server has no such rule. */
export interface RateThresholds {
  bounce: number | null;
  failure: number | null;
}

export async function fetchThresholds(token: string, signal?: AbortSignal): Promise<RateThresholds> {
  const body = await apiJson('/api/v1/alerts', { token, signal });
  const rules = isRecord(body) && Array.isArray(body.data) ? (body.data as AlertRuleStatus[]) : [];
  const threshold = (rule: string) => rules.find((r) => r.rule === rule)?.threshold ?? null;
  return { bounce: threshold('bounce_rate'), failure: threshold('failure_rate') };
}

export async function fetchApplications(token: string, signal?: AbortSignal): Promise<Application[]> {
  const body = await apiJson('/api/v1/applications', { token, signal });
  if (!isRecord(body) || !Array.isArray(body.data)) throw new Error('GET /api/v1/applications: the answer is not { data: [...] }');
  return body.data as Application[];
}

/** GET /api/v1/stats/applications?from&to: each application's totals over the range, in one call. */
export async function fetchPerApplication(
  token: string,
  range: StatsRange,
  signal?: AbortSignal,
): Promise<Map<number, Statistics['totals']>> {
  const body = await apiJson('/api/v1/stats/applications', { token, signal, query: { from: range.from, to: range.to } });
  if (!isRecord(body) || !Array.isArray(body.data)) throw new Error('GET /api/v1/stats/applications: the answer is not { data: [...] }');
  const totals = new Map<number, Statistics['totals']>();
  // Mails no API key submitted (id null) have no row in the applications table.
  for (const item of body.data as ApplicationStatistics[]) if (item.application.id !== null) totals.set(item.application.id, item.totals);
  return totals;
}

export const statisticsQuery = (token: string, range: StatsRange) =>
  queryOptions({
    queryKey: overviewKeys.statistics(range, null),
    queryFn: ({ signal }) => fetchStatistics(token, range, null, signal),
  });

export const thresholdsQuery = (token: string) =>
  queryOptions({ queryKey: overviewKeys.thresholds(), queryFn: ({ signal }) => fetchThresholds(token, signal), staleTime: 60_000 });

export const applicationsQuery = (token: string) =>
  queryOptions({ queryKey: overviewKeys.applications(), queryFn: ({ signal }) => fetchApplications(token, signal) });

/**
 * How often, at most, mail changes reported live ask for the Overview's figures again (docs/console.md §10.21): the
 * charts follow closely; the applications' table, whose figures move less to the eye, more slowly.
 */
export const LIVE_REFRESH_MS: Readonly<{ statistics: number; perApplication: number }> = { statistics: 2_000, perApplication: 10_000 };

/** `run` at most once every `everyMs`: the first call runs at once, later ones wait for the period's end. */
function throttle(run: () => void, everyMs: number, now: () => number): { call: () => void; stop: () => void } {
  let last = Number.NEGATIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // A timer may fire up to a millisecond before `now` says its delay has passed (the event loop's clock is cached
  // and whole milliseconds): it waits out the rest, so two runs are never closer than `everyMs`.
  const schedule = () => {
    timer = setTimeout(
      () => {
        if (now() < last + everyMs) return schedule();
        timer = undefined;
        last = now();
        run();
      },
      Math.max(0, last + everyMs - now()),
    );
  };
  return {
    call() {
      if (timer === undefined) schedule();
    },
    stop: () => clearTimeout(timer),
  };
}

/**
 * Statistics move with every mail that changes, and the console hears of each through its live updates (the
 * mails feature's stream): `onMailsChanged` marks the Overview's figures stale, throttled, and those shown are asked
 * for again. A fetch in flight is left to finish (no cancelRefetch: a steady flow of mails would otherwise restart
 * it forever). While the Overview is closed its queries are inactive, and this only marks them stale.
 */
export function createLiveStatisticsRefresh(queryClient: QueryClient, every = LIVE_REFRESH_MS, now: () => number = Date.now) {
  const invalidate = (queryKey: readonly unknown[]) => () => void queryClient.invalidateQueries({ queryKey }, { cancelRefetch: false });
  const statistics = throttle(invalidate(overviewKeys.allStatistics()), every.statistics, now);
  const perApplication = throttle(invalidate(overviewKeys.allPerApplication()), every.perApplication, now);
  return {
    onMailsChanged() {
      statistics.call();
      perApplication.call();
    },
    stop() {
      statistics.stop();
      perApplication.stop();
    },
  };
}
