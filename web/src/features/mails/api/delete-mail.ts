import { useMutation, useQueryClient } from '@tanstack/react-query';
import { apiSend } from '../../../lib/api-client';
import { mailKeys } from './list-mails';

/** DELETE /api/v1/mail/{id}; the body is not read (docs/console.md §7). */
export async function deleteMail(token: string, id: number): Promise<void> {
  await apiSend(`/api/v1/mail/${encodeURIComponent(String(id))}`, { method: 'DELETE', token });
}

export function deleteFailedMessage(id: number): string {
  return `Unable to Delete the mail #${id}`;
}

export function useDeleteMail(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationKey: mailKeys.action('delete'),
    mutationFn: (id: number) => deleteMail(token, id),
    onError: (_error, id) => {
      window.alert(deleteFailedMessage(id));
    },
    // docs/console.md §4: after a delete the list is reloaded, whatever the outcome.
    // The detail drawer shows the mail too: it is reloaded with the list.
    onSettled: () => queryClient.invalidateQueries({ queryKey: mailKeys.all }),
  });
}
