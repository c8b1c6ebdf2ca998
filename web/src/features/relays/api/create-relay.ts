import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { CreateRelayBody, Relay } from '@outbox/contract';
import { apiJson, firstOf } from '../../../lib/api-client';
import { relayKeys } from './relay-keys';

/** POST /api/v1/relays; the login in `credentials` is kept apart and never answered (`hasCredentials`). */
export async function createRelay(token: string, body: CreateRelayBody): Promise<Relay> {
  return firstOf(await apiJson('/api/v1/relays', { token, method: 'POST', body }), 'POST /api/v1/relays');
}

export function useCreateRelay(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: CreateRelayBody) => createRelay(token, body),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: relayKeys.all }),
  });
}
