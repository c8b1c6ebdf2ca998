import { queryOptions, useQuery } from '@tanstack/react-query';
import type { AlertsResponse } from '@outbox/contract';
import { apiJson, isRecord } from '../../../lib/api-client';

/**
 * The fallback poll of the alert banner (docs/alerts.md): the live stream's `alerts` event refreshes it at once
 * (the app's live hook invalidates `alertKeys.all`), this catches a stream that is down.
 */
export const ALERTS_POLL_MS = 15_000;

/** By name, so the live hook (another feature) can invalidate it without importing this one. */
export const alertKeys = { all: ['alerts'] as const };

function isAlertsResponse(value: unknown): value is AlertsResponse {
  return isRecord(value) && Array.isArray(value.data) && isRecord(value.meta);
}

/** GET /api/v1/alerts */
export async function getAlerts(token: string, signal?: AbortSignal): Promise<AlertsResponse> {
  const body = await apiJson('/api/v1/alerts', { token, signal });
  if (!isAlertsResponse(body)) throw new Error('The alerts answer is not { data: AlertRuleStatus[], meta }');
  return body;
}

export function useAlerts(token: string) {
  return useQuery(
    queryOptions({
      queryKey: alertKeys.all,
      queryFn: ({ signal }) => getAlerts(token, signal),
      enabled: token !== '',
      refetchInterval: ALERTS_POLL_MS,
    }),
  );
}
