import { queryOptions, useQuery } from '@tanstack/react-query';
import type { QueueHealth } from '@outbox/contract';
import { apiJson, isRecord } from '../../../lib/api-client';

/** How often the strip asks (docs/console.md §10): cheap on the server (counters and index ranges). */
export const HEALTH_POLL_MS = 5000;

export const healthKeys = { all: ['queue-health'] as const };

function isQueueHealth(value: unknown): value is QueueHealth {
  return isRecord(value) && typeof value.dueNow === 'number' && typeof value.liveWorkers === 'number';
}

/** GET /api/v1/queue/health */
export async function getQueueHealth(token: string, signal?: AbortSignal): Promise<QueueHealth> {
  const body = await apiJson('/api/v1/queue/health', { token, signal });
  const health = isRecord(body) && Array.isArray(body.data) ? (body.data[0] as unknown) : undefined;
  if (!isQueueHealth(health)) throw new Error('The queue health answer is not { data: [QueueHealth] }');
  return health;
}

export function queueHealthQueryOptions(token: string) {
  return queryOptions({
    queryKey: healthKeys.all,
    queryFn: ({ signal }) => getQueueHealth(token, signal),
    enabled: token !== '',
    refetchInterval: HEALTH_POLL_MS,
  });
}

export function useQueueHealth(token: string) {
  return useQuery(queueHealthQueryOptions(token));
}
