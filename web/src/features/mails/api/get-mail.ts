import { queryOptions, useQuery, type QueryClient } from '@tanstack/react-query';
import type { MailDetail } from '@outbox/contract';
import { apiJson, apiRequest, isRecord } from '../../../lib/api-client';
import { saveDownload } from '../../../lib/save-download';
import { mailKeys } from './list-mails';

function isMailDetail(body: unknown): body is { data: [MailDetail] } {
  return isRecord(body) && Array.isArray(body.data) && isRecord(body.data[0]) && Array.isArray(body.data[0].events);
}

/** GET /api/v1/mail/{id}: the row, its message (headers, bodies) and its history. */
export async function getMail(token: string, id: number, signal?: AbortSignal): Promise<MailDetail> {
  const body = await apiJson(`/api/v1/mail/${encodeURIComponent(String(id))}`, { token, signal });
  if (!isMailDetail(body)) throw new Error('The mail detail answer is not { data: [MailDetail] }');
  return body.data[0];
}

export function mailDetailQueryOptions(token: string, id: number) {
  return queryOptions({
    queryKey: mailKeys.detail(id),
    queryFn: ({ signal }) => getMail(token, id, signal),
    enabled: token !== '',
  });
}

/**
 * Starts loading a mail's detail before its drawer is built: from the row's press (the release that opens it
 * follows 50–100 ms later) or from the open itself, so the request runs while React renders the drawer. The
 * drawer's own query finds it under the same key; a fresh one in the cache is not asked again.
 */
export function prefetchMailDetail(queryClient: QueryClient, token: string, id: number): void {
  void queryClient.prefetchQuery(mailDetailQueryOptions(token, id));
}

export function useMailDetail(token: string, id: number) {
  return useQuery(mailDetailQueryOptions(token, id));
}

/**
 * GET /api/v1/mail/{id}/raw, saved as mail-{id}.eml. Fetched with the token header (a plain link could not
 * carry it, and the token never goes into a URL), then handed to the browser as a download.
 */
export async function downloadRawMail(token: string, id: number): Promise<void> {
  const response = await apiRequest(`/api/v1/mail/${encodeURIComponent(String(id))}/raw`, { token });
  await saveDownload(response, `mail-${id}.eml`);
}
