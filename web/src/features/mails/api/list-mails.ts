import { keepPreviousData, queryOptions, useQuery, type QueryClient, type QueryKey } from '@tanstack/react-query';
import { MAIL_SORTS, type Mail, type MailListResponse, type MailSort } from '@outbox/contract';
import { apiJson, isRecord } from '../../../lib/api-client';

/** docs/console.md §2 / §9: 50 rows per page. */
export const PAGE_SIZE = 50;

export type SortOrder = 'asc' | 'desc';

/** The list call's sorts: the contract's, `to` (the first recipient's address) among them. */
export const LIST_SORTS = MAIL_SORTS;
export type ListSort = MailSort;

export interface MailListParams {
  sort: ListSort;
  order: SortOrder;
  /** Opaque keyset cursor from meta.nextCursor / meta.prevCursor; null for the first page. */
  cursor: string | null;
  limit: number;
  /** Status codes; empty: every status. */
  statuses: number[];
  /** Search in sender, recipients and subject; empty: none. */
  q: string;
  /** ISO instants, both inclusive; null: open. */
  receivedFrom: string | null;
  receivedTo: string | null;
  /** One application's mails (an API key's id, or `none`); null: every mail. */
  application: string | null;
}

/**
 * The feature's query and mutation keys. Each is one object, so a key is read by its fields' names, never by
 * position; TanStack Query matches a filter key against a longer one field by field, so `all` matches every
 * key of the feature and `lists()` every list page.
 */
export const mailKeys = {
  all: [{ scope: 'mails' }] as const,
  lists: () => [{ scope: 'mails', entity: 'list' }] as const,
  list: (params: MailListParams) => [{ scope: 'mails', entity: 'list', params }] as const,
  details: () => [{ scope: 'mails', entity: 'detail' }] as const,
  detail: (id: number) => [{ scope: 'mails', entity: 'detail', id }] as const,
  webhookDeliveries: (id: number) => [{ scope: 'mails', entity: 'webhook-deliveries', id }] as const,
  action: (action: 'dequeue' | 'requeue' | 'delete') => [{ scope: 'mails', entity: 'action', action }] as const,
};

/** The parameters of a cached list page from its key (a key `getQueriesData(mailKeys.lists())` gives back). */
export function listParamsOfKey(key: QueryKey): MailListParams | undefined {
  const [first] = key;
  return isRecord(first) && first.scope === 'mails' && first.entity === 'list' && isRecord(first.params)
    ? (first.params as unknown as MailListParams)
    : undefined;
}

function isMailListResponse(body: unknown): body is MailListResponse {
  return isRecord(body) && Array.isArray(body.data) && isRecord(body.meta) && typeof body.meta.total === 'number';
}

/** GET /api/v1/mail/list?limit=50&sort=…&order=…[&cursor=…][&status=…][&q=…][&receivedFrom=…][&receivedTo=…][&application=…] */
export async function listMails(token: string, params: MailListParams, signal?: AbortSignal): Promise<MailListResponse> {
  const body = await apiJson('/api/v1/mail/list', {
    token,
    signal,
    query: {
      limit: params.limit,
      sort: params.sort,
      order: params.order,
      cursor: params.cursor,
      status: params.statuses.length > 0 ? params.statuses.join(',') : null,
      q: params.q === '' ? null : params.q,
      receivedFrom: params.receivedFrom,
      receivedTo: params.receivedTo,
      application: params.application,
    },
  });
  if (isMailListResponse(body)) return body;
  if (isRecord(body) && Array.isArray(body.data)) return pageLocally(body.data as Mail[], params);
  throw new Error('The mail list answer is not { data }');
}

const LOCAL_CURSOR = /^local:(\d+)$/;

/**
 * The list answer of docs/console.md §3 is only `{ data }`: a server that sends no `meta` (the four calls as
 * first specified, without server-side paging) answers every mail at once. The console then pages that list
 * itself, 50 rows at a time, with cursors of its own (`local:N`, the offset) that such a server ignores.
 */
function pageLocally(rows: Mail[], params: MailListParams): MailListResponse {
  const offset = Number(LOCAL_CURSOR.exec(params.cursor ?? '')?.[1] ?? 0);
  const size = params.limit > 0 ? params.limit : PAGE_SIZE;
  const lastOffset = rows.length === 0 ? 0 : Math.floor((rows.length - 1) / size) * size;
  return {
    data: rows.slice(offset, offset + size),
    meta: {
      total: rows.length,
      totalIsLowerBound: false,
      totalIsEstimate: false,
      nextCursor: offset + size < rows.length ? `local:${offset + size}` : null,
      // The page before is a full one, also from the last page (which may be shorter).
      prevCursor: offset > 0 ? `local:${Math.max(0, offset - PAGE_SIZE)}` : null,
      lastCursor: offset < lastOffset ? `local:${lastOffset}` : null,
      counts: {},
    },
  };
}

export function listMailsQueryOptions(token: string, params: MailListParams) {
  return queryOptions({
    queryKey: mailKeys.list(params),
    queryFn: ({ signal }) => listMails(token, params, signal),
    // docs/console.md §4: the list is loaded only once a non-empty token is held.
    enabled: token !== '',
    // The previous page stays on screen while the next one loads: no layout shift.
    placeholderData: keepPreviousData,
  });
}

export function useMailList(token: string, params: MailListParams) {
  return useQuery(listMailsQueryOptions(token, params));
}

/**
 * Starts loading the list page of `params` before the view that shows it renders (the first page right after
 * login, the next page as a view change is dispatched); the view's own query finds it under the same key, in
 * the cache or in flight. Resolves when it is in the cache, or failed (the view shows that).
 */
export function prefetchMailList(queryClient: QueryClient, token: string, params: MailListParams): Promise<void> {
  return queryClient.prefetchQuery(listMailsQueryOptions(token, params));
}
