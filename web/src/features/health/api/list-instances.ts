import { queryOptions, useQuery } from '@tanstack/react-query';
import type { InstancesResponse } from '@outbox/contract';
import { apiJson, isRecord } from '../../../lib/api-client';

/** While the Instances view is open it asks as often as the strip (docs/console.md §10.14): one small table read. */
export const INSTANCES_POLL_MS = 5000;

export const instancesKeys = { all: ['instances'] as const };

function isInstancesResponse(body: unknown): body is InstancesResponse {
  return isRecord(body) && Array.isArray(body.data) && isRecord(body.meta) && typeof body.meta.liveWorkers === 'number';
}

/** GET /api/v1/instances */
export async function listInstances(token: string, signal?: AbortSignal): Promise<InstancesResponse> {
  const body = await apiJson('/api/v1/instances', { token, signal });
  if (!isInstancesResponse(body)) throw new Error('The instances answer is not { data: [Instance], meta }');
  return body;
}

export function instancesQueryOptions(token: string) {
  return queryOptions({
    queryKey: instancesKeys.all,
    queryFn: ({ signal }) => listInstances(token, signal),
    enabled: token !== '',
    refetchInterval: INSTANCES_POLL_MS,
  });
}

export function useInstances(token: string) {
  return useQuery(instancesQueryOptions(token));
}
