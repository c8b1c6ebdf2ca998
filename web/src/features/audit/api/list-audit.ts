import { infiniteQueryOptions, useInfiniteQuery } from '@tanstack/react-query';
import type { AuditResponse } from '@outbox/contract';
import { apiJson, apiRequest, isRecord } from '../../../lib/api-client';
import { saveDownload } from '../../../lib/save-download';

export const AUDIT_PAGE_SIZE = 50;

/** The panel's filters; empty strings are left out of the call. `from`/`to` are ISO instants. */
export interface AuditFilters {
  operator: string;
  action: string;
  from: string;
  to: string;
}

export const auditKeys = {
  all: ['audit'] as const,
  list: (filters: AuditFilters) => [...auditKeys.all, 'list', filters] as const,
};

function queryOf(filters: AuditFilters): Record<string, string | null> {
  const value = (text: string) => (text.trim() === '' ? null : text.trim());
  return { operator: value(filters.operator), action: value(filters.action), from: value(filters.from), to: value(filters.to) };
}

function isAuditResponse(body: unknown): body is AuditResponse {
  return isRecord(body) && Array.isArray(body.data) && isRecord(body.meta);
}

/** GET /api/v1/audit?limit=50[&cursor=…][&operator=…][&action=…][&from=…][&to=…]: newest first, keyset paged. */
export async function listAudit(token: string, filters: AuditFilters, cursor: string | null, signal?: AbortSignal): Promise<AuditResponse> {
  const body = await apiJson('/api/v1/audit', { token, signal, query: { limit: AUDIT_PAGE_SIZE, cursor, ...queryOf(filters) } });
  if (!isAuditResponse(body)) throw new Error('The audit answer is not { data, meta }');
  return body;
}

export function auditQueryOptions(token: string, filters: AuditFilters) {
  return infiniteQueryOptions({
    queryKey: auditKeys.list(filters),
    queryFn: ({ pageParam, signal }) => listAudit(token, filters, pageParam, signal),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.meta.nextCursor,
    enabled: token !== '',
  });
}

export function useAuditLog(token: string, filters: AuditFilters) {
  return useInfiniteQuery(auditQueryOptions(token, filters));
}

/**
 * The CSV export of the same filters. The token goes in the Authorization header, never in a URL: the file is
 * fetched, then handed to the browser as a Blob to save.
 */
export async function downloadAuditCsv(token: string, filters: AuditFilters): Promise<void> {
  const response = await apiRequest('/api/v1/audit', { token, query: { format: 'csv', ...queryOf(filters) } });
  await saveDownload(response, 'outbox-audit.csv');
}
