import { queryOptions, useQuery } from '@tanstack/react-query';
import type { Route } from '@outbox/contract';
import { apiJson, dataOf } from '../../../lib/api-client';
import { relayKeys } from './relay-keys';

/** GET /api/v1/routes: the routes in order; the first that matches a mail picks its relays. */
export async function listRoutes(token: string, signal?: AbortSignal): Promise<Route[]> {
  return dataOf<Route>(await apiJson('/api/v1/routes', { token, signal }), 'GET /api/v1/routes');
}

export function routesQueryOptions(token: string) {
  return queryOptions({
    queryKey: relayKeys.routes(),
    queryFn: ({ signal }) => listRoutes(token, signal),
    refetchOnMount: 'always',
    // The editor starts from the routes as they were when it opened; a refetch behind it would not change its
    // draft anyway, so none on focus.
    refetchOnWindowFocus: false,
  });
}

export function useRoutes(token: string) {
  return useQuery(routesQueryOptions(token));
}
