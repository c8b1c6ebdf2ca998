import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { PutRoutesBody, Route } from '@outbox/contract';
import { apiJson, dataOf } from '../../../lib/api-client';
import { relayKeys } from './relay-keys';

/** PUT /api/v1/routes: every route, in order, replacing the list; a 400 names the first field at fault. */
export async function replaceRoutes(token: string, body: PutRoutesBody): Promise<Route[]> {
  return dataOf<Route>(await apiJson('/api/v1/routes', { token, method: 'PUT', body }), 'PUT /api/v1/routes');
}

export function useReplaceRoutes(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: PutRoutesBody) => replaceRoutes(token, body),
    // The answer is the list as saved: the editor and the next reader start from it without asking again.
    onSuccess: (routes) => queryClient.setQueryData(relayKeys.routes(), routes),
  });
}
