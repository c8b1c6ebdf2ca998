/**
 * The webhooks calls (docs/api.md#webhooks): endpoints, their delivery log, replay, and the applications an
 * endpoint may be limited to. One query key tree, `webhookKeys`, so a change invalidates what it affects.
 */
import { infiniteQueryOptions, queryOptions, useInfiniteQuery, useQuery } from '@tanstack/react-query';
import type {
  Application,
  CreateWebhookBody,
  ReplayWebhookBody,
  ReplayWebhookResult,
  UpdateWebhookBody,
  WebhookApplication,
  WebhookDeliveriesResponse,
  WebhookDelivery,
  WebhookDeliveryState,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookTestResult,
} from '@outbox/contract';
import { apiJson, dataOf, firstOf, isRecord } from '../../../lib/api-client';

export const DELIVERIES_PAGE_SIZE = 50;

export const webhookKeys = {
  all: ['webhooks'] as const,
  endpoints: () => [...webhookKeys.all, 'endpoints'] as const,
  deliveries: (endpointId: number, state: WebhookDeliveryState | null) =>
    [...webhookKeys.all, 'deliveries', { endpointId, state }] as const,
  applications: () => [...webhookKeys.all, 'applications'] as const,
};

export async function listEndpoints(token: string, signal?: AbortSignal): Promise<WebhookEndpoint[]> {
  return dataOf<WebhookEndpoint>(await apiJson('/api/v1/webhooks', { token, signal }), 'GET /api/v1/webhooks');
}

/** The applications an endpoint may be limited to: the ones not revoked. */
export async function listApplications(token: string, signal?: AbortSignal): Promise<WebhookApplication[]> {
  const applications = dataOf<Pick<Application, 'id' | 'name'> & Partial<Pick<Application, 'revokedAt'>>>(
    await apiJson('/api/v1/applications', { token, signal }),
    'GET /api/v1/applications',
  );
  return applications.filter((application) => !application.revokedAt).map(({ id, name }) => ({ id, name }));
}

export async function createEndpoint(token: string, body: CreateWebhookBody): Promise<WebhookEndpointWithSecret> {
  return firstOf(await apiJson('/api/v1/webhooks', { token, method: 'POST', body }), 'POST /api/v1/webhooks');
}

export async function updateEndpoint(token: string, id: number, body: UpdateWebhookBody): Promise<WebhookEndpoint> {
  return firstOf(await apiJson(`/api/v1/webhooks/${id}`, { token, method: 'PATCH', body }), 'PATCH /api/v1/webhooks/{id}');
}

export async function deleteEndpoint(token: string, id: number): Promise<void> {
  await apiJson(`/api/v1/webhooks/${id}`, { token, method: 'DELETE' });
}

export async function rotateSecret(token: string, id: number): Promise<WebhookEndpointWithSecret> {
  return firstOf(
    await apiJson(`/api/v1/webhooks/${id}/rotate-secret`, { token, method: 'POST' }),
    'POST /api/v1/webhooks/{id}/rotate-secret',
  );
}

export async function sendTestEvent(token: string, id: number): Promise<WebhookTestResult> {
  return firstOf(await apiJson(`/api/v1/webhooks/${id}/test`, { token, method: 'POST' }), 'POST /api/v1/webhooks/{id}/test');
}

export async function replay(token: string, id: number, body: ReplayWebhookBody): Promise<ReplayWebhookResult> {
  return firstOf(await apiJson(`/api/v1/webhooks/${id}/replay`, { token, method: 'POST', body }), 'POST /api/v1/webhooks/{id}/replay');
}

export async function listDeliveries(
  token: string,
  endpointId: number,
  state: WebhookDeliveryState | null,
  cursor: string | null,
  signal?: AbortSignal,
): Promise<WebhookDeliveriesResponse> {
  const body = await apiJson(`/api/v1/webhooks/${endpointId}/deliveries`, {
    token,
    signal,
    query: { limit: DELIVERIES_PAGE_SIZE, cursor, state },
  });
  if (!isRecord(body) || !Array.isArray(body.data) || !isRecord(body.meta)) throw new Error('The deliveries answer is not { data, meta }');
  return body as unknown as WebhookDeliveriesResponse;
}

export function useEndpoints(token: string) {
  return useQuery(
    queryOptions({
      queryKey: webhookKeys.endpoints(),
      queryFn: ({ signal }) => listEndpoints(token, signal),
      // The success rates and states move while the panel is open.
      refetchInterval: 10_000,
    }),
  );
}

export function useApplications(token: string) {
  return useQuery(queryOptions({ queryKey: webhookKeys.applications(), queryFn: ({ signal }) => listApplications(token, signal) }));
}

export function useDeliveries(token: string, endpointId: number, state: WebhookDeliveryState | null) {
  return useInfiniteQuery(
    infiniteQueryOptions({
      queryKey: webhookKeys.deliveries(endpointId, state),
      queryFn: ({ pageParam, signal }) => listDeliveries(token, endpointId, state, pageParam, signal),
      initialPageParam: null as string | null,
      getNextPageParam: (last) => last.meta.nextCursor,
      refetchInterval: 10_000,
    }),
  );
}

export type { WebhookDelivery };
