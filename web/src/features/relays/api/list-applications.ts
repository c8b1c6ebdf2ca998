import { queryOptions, useQuery } from '@tanstack/react-query';
import type { Application } from '@outbox/contract';
import { apiJson, dataOf } from '../../../lib/api-client';
import { relayKeys } from './relay-keys';

/** GET /api/v1/applications: the routes editor's choice of application (a route may match one). */
export async function listApplications(token: string, signal?: AbortSignal): Promise<Application[]> {
  return dataOf<Application>(await apiJson('/api/v1/applications', { token, signal }), 'GET /api/v1/applications');
}

export function useApplications(token: string) {
  return useQuery(
    queryOptions({
      queryKey: relayKeys.applications(),
      queryFn: ({ signal }) => listApplications(token, signal),
    }),
  );
}
