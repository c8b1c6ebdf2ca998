import type { WebhookDelivery } from '@outbox/contract';
import { LocalTime } from '../../../components/ui/local-time';
import { DetailTable } from './mail-detail-table';

/** The webhook deliveries of the mail's events: which endpoint, which event, its state and the last answer. */
export function WebhookDeliveries({ deliveries }: { deliveries: WebhookDelivery[] }) {
  return (
    <DetailTable columns={['Time', 'Event', 'Endpoint', 'State', 'Attempts', 'Last answer']}>
      {deliveries.map((delivery) => {
        const last = delivery.attempts.at(-1);
        return (
          <tr key={delivery.id}>
            <td className="nowrap">
              <LocalTime iso={delivery.createdAt} />
            </td>
            <td>{delivery.eventType}</td>
            <td className="detail-table__detail">{delivery.endpointUrl}</td>
            <td>{delivery.state}</td>
            <td>{delivery.attempts.length}</td>
            <td className="detail-table__detail">
              {last ? (last.httpStatus === null ? (last.error ?? 'No answer') : `HTTP ${last.httpStatus} in ${last.durationMs} ms`) : '—'}
            </td>
          </tr>
        );
      })}
    </DetailTable>
  );
}
