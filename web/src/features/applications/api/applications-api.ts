/**
 * The applications calls (docs/api.md#managing-applications-apiv1applications): list, create, rename, revoke, rotate. One query
 * key tree, `applicationKeys`, so a change refreshes the list.
 */
import { queryOptions, useQuery } from '@tanstack/react-query';
import type { Application, ApplicationWithKey, Lane } from '@outbox/contract';
import { apiJson, dataOf, firstOf } from '../../../lib/api-client';

export const applicationKeys = {
  all: ['applications'] as const,
  list: () => [...applicationKeys.all, 'list'] as const,
};

export async function listApplications(token: string, signal?: AbortSignal): Promise<Application[]> {
  return dataOf<Application>(await apiJson('/api/v1/applications', { token, signal }), 'GET /api/v1/applications');
}

export async function createApplication(token: string, name: string, lane: Lane = 'transactional'): Promise<ApplicationWithKey> {
  return firstOf(await apiJson('/api/v1/applications', { token, method: 'POST', body: { name, lane } }), 'POST /api/v1/applications');
}

/** PATCH: any of the lane and the content retention (null: back to CONTENT_RETENTION_DAYS). */
export async function updateApplication(
  token: string,
  id: number,
  changes: { lane?: Lane; contentRetentionDays?: number | null },
): Promise<Application> {
  return firstOf(await apiJson(`/api/v1/applications/${id}`, { token, method: 'PATCH', body: changes }), 'PATCH /api/v1/applications/{id}');
}

export async function renameApplication(token: string, id: number, name: string): Promise<Application> {
  return firstOf(
    await apiJson(`/api/v1/applications/${id}`, { token, method: 'PATCH', body: { name } }),
    'PATCH /api/v1/applications/{id}',
  );
}

export async function revokeApplication(token: string, id: number): Promise<Application> {
  return firstOf(await apiJson(`/api/v1/applications/${id}/revoke`, { token, method: 'POST' }), 'POST /api/v1/applications/{id}/revoke');
}

export async function rotateApplicationKey(token: string, id: number, graceSeconds: number): Promise<ApplicationWithKey> {
  return firstOf(
    await apiJson(`/api/v1/applications/${id}/rotate`, { token, method: 'POST', body: { graceSeconds } }),
    'POST /api/v1/applications/{id}/rotate',
  );
}

export function useApplications(token: string) {
  return useQuery(
    queryOptions({
      queryKey: applicationKeys.list(),
      queryFn: ({ signal }) => listApplications(token, signal),
      // Last use and the 24-hour counts move: fresh when the panel opens, and while it is open.
      refetchOnMount: 'always',
      refetchInterval: 15_000,
    }),
  );
}
