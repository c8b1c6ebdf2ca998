import { useMutation, useQueryClient } from '@tanstack/react-query';
import { apiSend } from '../../../lib/api-client';
import { mailKeys } from './list-mails';

/** POST /api/v1/mail/{id}/requeue: a Dequeued, ProviderError or Error mail goes back to the queue, due now. */
export async function requeueMail(token: string, id: number): Promise<void> {
  await apiSend(`/api/v1/mail/${encodeURIComponent(String(id))}/requeue`, { method: 'POST', token });
}

/** Worded like the spec's own alerts (docs/console.md §8) for the action it adds. */
export function requeueFailedMessage(id: number): string {
  return `Unable to Requeue the mail #${id}`;
}

export function useRequeueMail(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationKey: mailKeys.action('requeue'),
    mutationFn: (id: number) => requeueMail(token, id),
    onError: (_error, id) => {
      window.alert(requeueFailedMessage(id));
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: mailKeys.all }),
  });
}
