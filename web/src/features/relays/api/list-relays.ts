import { queryOptions, useQuery } from '@tanstack/react-query';
import type { Relay } from '@outbox/contract';
import { apiJson, dataOf } from '../../../lib/api-client';
import { relayKeys } from './relay-keys';

/** GET /api/v1/relays: every named relay, never with its login. */
export async function listRelays(token: string, signal?: AbortSignal): Promise<Relay[]> {
  return dataOf<Relay>(await apiJson('/api/v1/relays', { token, signal }), 'GET /api/v1/relays');
}

export function relaysQueryOptions(token: string) {
  return queryOptions({
    queryKey: relayKeys.list(),
    queryFn: ({ signal }) => listRelays(token, signal),
    // Another operator may have changed them: fresh each time the view opens.
    refetchOnMount: 'always',
  });
}

export function useRelays(token: string) {
  return useQuery(relaysQueryOptions(token));
}
