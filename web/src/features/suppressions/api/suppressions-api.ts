/**
 * The suppression list and the unmatched bounce reports (docs/api.md#suppressions-apiv1suppressions, docs/bounces.md): one file for
 * the feature's calls, with one query key tree, `suppressionKeys`, so a change invalidates what it affects.
 */
import { infiniteQueryOptions, useInfiniteQuery } from '@tanstack/react-query';
import type {
  AddSuppressionRequest,
  BounceReport,
  BouncesResponse,
  Suppression,
  SuppressionImportResponse,
  SuppressionListResponse,
} from '@outbox/contract';
import { apiJson, apiRequest, apiSend, isRecord } from '../../../lib/api-client';
import { saveDownload } from '../../../lib/save-download';

export const SUPPRESSIONS_PAGE_SIZE = 50;

export const suppressionKeys = {
  all: ['suppressions'] as const,
  list: (search: string) => [...suppressionKeys.all, 'list', { search }] as const,
  unmatchedReports: () => [...suppressionKeys.all, 'unmatched-reports'] as const,
};

function isPage(body: unknown): body is { data: unknown[]; meta: { nextCursor: string | null } } {
  return isRecord(body) && Array.isArray(body.data) && isRecord(body.meta);
}

/** GET /api/v1/suppressions?limit=50[&cursor=…][&q=…]: newest first, keyset paged; `q` is an address substring. */
export async function listSuppressions(
  token: string,
  search: string,
  cursor: string | null,
  signal?: AbortSignal,
): Promise<SuppressionListResponse> {
  const q = search.trim() === '' ? null : search.trim();
  const body = await apiJson('/api/v1/suppressions', { token, signal, query: { limit: SUPPRESSIONS_PAGE_SIZE, cursor, q } });
  if (!isPage(body)) throw new Error('The suppressions answer is not { data, meta }');
  return body as SuppressionListResponse;
}

export function useSuppressions(token: string, search: string) {
  return useInfiniteQuery(
    infiniteQueryOptions({
      queryKey: suppressionKeys.list(search.trim()),
      queryFn: ({ pageParam, signal }) => listSuppressions(token, search, pageParam, signal),
      initialPageParam: null as string | null,
      getNextPageParam: (last) => last.meta.nextCursor,
    }),
  );
}

/** POST /api/v1/suppressions: adds the address by hand (or refreshes it); the answer is the entry itself. */
export async function addSuppression(token: string, body: AddSuppressionRequest): Promise<Suppression> {
  const entry = await apiJson('/api/v1/suppressions', { token, method: 'POST', body });
  if (!isRecord(entry) || typeof entry.address !== 'string') throw new Error('POST /api/v1/suppressions: the answer is not an entry');
  return entry as unknown as Suppression;
}

/** DELETE /api/v1/suppressions/{address}: the address URL-encoded, as the route reads it. */
export async function removeSuppression(token: string, address: string): Promise<void> {
  await apiSend(`/api/v1/suppressions/${encodeURIComponent(address)}`, { token, method: 'DELETE' });
}

/** POST /api/v1/suppressions/import with the file's text as text/csv: what was added, updated and refused. */
export async function importSuppressions(token: string, csv: string): Promise<SuppressionImportResponse> {
  const result = await apiJson('/api/v1/suppressions/import', {
    token,
    method: 'POST',
    rawBody: { contentType: 'text/csv', content: csv },
  });
  if (!isRecord(result) || typeof result.added !== 'number' || !Array.isArray(result.refused))
    throw new Error('The import answer is not { added, updated, refused }');
  return result as unknown as SuppressionImportResponse;
}

/**
 * The CSV export of the entries the search matches. The token goes in the Authorization header, never in a URL:
 * the file is fetched, then handed to the browser as a Blob to save (as the audit log's export does).
 */
export async function downloadSuppressionsCsv(token: string, search: string): Promise<void> {
  const q = search.trim() === '' ? null : search.trim();
  const response = await apiRequest('/api/v1/suppressions', { token, query: { format: 'csv', q } });
  await saveDownload(response, 'outbox-suppressions.csv');
}

/** GET /api/v1/bounces?matched=false: the reports no mail was found for, which wait for an operator. */
export async function listUnmatchedReports(token: string, cursor: string | null, signal?: AbortSignal): Promise<BouncesResponse> {
  const body = await apiJson('/api/v1/bounces', { token, signal, query: { matched: 'false', limit: SUPPRESSIONS_PAGE_SIZE, cursor } });
  if (!isPage(body)) throw new Error('The bounces answer is not { data, meta }');
  return body as BouncesResponse;
}

export function useUnmatchedReports(token: string) {
  return useInfiniteQuery(
    infiniteQueryOptions({
      queryKey: suppressionKeys.unmatchedReports(),
      queryFn: ({ pageParam, signal }) => listUnmatchedReports(token, pageParam, signal),
      initialPageParam: null as string | null,
      getNextPageParam: (last) => last.meta.nextCursor,
    }),
  );
}

export type { BounceReport, Suppression };
