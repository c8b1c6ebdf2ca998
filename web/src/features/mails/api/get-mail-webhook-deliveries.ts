import { queryOptions, useQuery } from '@tanstack/react-query';
import type { WebhookDelivery } from '@outbox/contract';
import { apiJson, isRecord } from '../../../lib/api-client';
import { mailKeys } from './list-mails';

/** GET /api/v1/mail/{id}/webhook-deliveries: the first page (50) of the webhook deliveries of the mail's events, with their attempts. */
export async function getMailWebhookDeliveries(token: string, id: number, signal?: AbortSignal): Promise<WebhookDelivery[]> {
  const body = await apiJson(`/api/v1/mail/${encodeURIComponent(String(id))}/webhook-deliveries`, { token, signal });
  if (!isRecord(body) || !Array.isArray(body.data)) throw new Error('The webhook deliveries answer is not { data: [...] }');
  return body.data as WebhookDelivery[];
}

export function useMailWebhookDeliveries(token: string, id: number) {
  return useQuery(
    queryOptions({
      queryKey: mailKeys.webhookDeliveries(id),
      queryFn: ({ signal }) => getMailWebhookDeliveries(token, id, signal),
      enabled: token !== '',
    }),
  );
}
