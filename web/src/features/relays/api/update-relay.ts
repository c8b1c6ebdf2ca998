import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { Relay, UpdateRelayBody } from '@outbox/contract';
import { apiJson, firstOf } from '../../../lib/api-client';
import { relayKeys } from './relay-keys';

/** PATCH /api/v1/relays/{id}: only the fields that change; `credentials: null` removes the login. */
export async function updateRelay(token: string, id: number, body: UpdateRelayBody): Promise<Relay> {
  return firstOf(await apiJson(`/api/v1/relays/${id}`, { token, method: 'PATCH', body }), 'PATCH /api/v1/relays/{id}');
}

export function useUpdateRelay(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (input: { id: number; body: UpdateRelayBody }) => updateRelay(token, input.id, input.body),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: relayKeys.all }),
  });
}
