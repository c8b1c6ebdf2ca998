import { useMutation, useQueryClient } from '@tanstack/react-query';
import { apiSend } from '../../../lib/api-client';
import { mailKeys } from './list-mails';

/** GET /api/v1/mail/{id}/dequeue; the body is not read (docs/console.md §7). */
export async function dequeueMail(token: string, id: number): Promise<void> {
  await apiSend(`/api/v1/mail/${encodeURIComponent(String(id))}/dequeue`, { method: 'GET', token });
}

export function dequeueFailedMessage(id: number): string {
  return `Unable to Dequeue the mail #${id}`;
}

export function useDequeueMail(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationKey: mailKeys.action('dequeue'),
    mutationFn: (id: number) => dequeueMail(token, id),
    onError: (_error, id) => {
      window.alert(dequeueFailedMessage(id));
    },
    // docs/console.md §4: after a dequeue the list is reloaded, whatever the outcome.
    // The detail drawer shows the mail too: it is reloaded with the list.
    onSettled: () => queryClient.invalidateQueries({ queryKey: mailKeys.all }),
  });
}
