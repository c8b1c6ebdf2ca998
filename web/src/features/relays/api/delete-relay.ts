import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { Relay } from '@outbox/contract';
import { apiSend } from '../../../lib/api-client';
import { relayKeys } from './relay-keys';

/** DELETE /api/v1/relays/{id}: 204, or 409 while a route names the relay (its message names the routes). */
export async function deleteRelay(token: string, id: number): Promise<void> {
  await apiSend(`/api/v1/relays/${id}`, { token, method: 'DELETE' });
}

export function useDeleteRelay(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (relay: Relay) => deleteRelay(token, relay.id),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: relayKeys.all }),
  });
}
