import { queryOptions, useQuery } from '@tanstack/react-query';
import type { RelayHealth } from '@outbox/contract';
import { ApiError, apiJson, dataOf } from '../../../lib/api-client';
import { relayKeys } from './relay-keys';

/** As often as the queue health strip asks (docs/console.md §10.14), so a relay going down shows in both at once. */
export const RELAY_HEALTH_POLL_MS = 5000;

/**
 * GET /api/v1/relays/health: each relay's state as the live workers see it. `null` when the server has no such
 * call (a server older than relay health): the view then shows every state as unknown rather than failing. Such a
 * server answers 404, or 400 where its `GET /api/v1/relays/:id` takes the path and refuses `health` as an id.
 */
export async function listRelayHealth(token: string, signal?: AbortSignal): Promise<RelayHealth[] | null> {
  try {
    return dataOf<RelayHealth>(await apiJson('/api/v1/relays/health', { token, signal }), 'GET /api/v1/relays/health');
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 400)) return null;
    throw error;
  }
}

export function relayHealthQueryOptions(token: string) {
  return queryOptions({
    queryKey: relayKeys.health(),
    queryFn: ({ signal }) => listRelayHealth(token, signal),
    refetchInterval: RELAY_HEALTH_POLL_MS,
  });
}

export function useRelayHealth(token: string) {
  return useQuery(relayHealthQueryOptions(token));
}
