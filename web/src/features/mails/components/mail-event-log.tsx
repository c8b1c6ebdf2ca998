import type { MailEvent } from '@outbox/contract';
import { STATUSES } from '@outbox/contract/status';
import { LocalTime } from '../../../components/ui/local-time';
import { DetailTable } from './mail-detail-table';

const statusName = (code: number | null) => (code === null ? '—' : (STATUSES[code]?.name ?? String(code)));

/** Labels of the event details the server writes (delivery outcomes, retries, leases, operator actions). */
const DETAIL_LABELS: Record<string, string> = {
  attempt: 'Attempt',
  reply: 'Reply',
  code: 'SMTP code',
  durationMs: 'Took',
  worker: 'Worker',
  nextAttemptAt: 'Next attempt',
  pendingRecipients: 'Going again to',
  rejectedRecipients: 'Refused',
  recipients: 'Recipients',
  reason: 'Reason',
  heldBy: 'Held by',
  relay: 'Relay',
  passedOver: 'Failed over from',
};

function recipientLine(value: unknown): string {
  if (!isObject(value)) return String(value);
  // A recipient's answer ({address, outcome, reply}) or a relay failed over from ({relay, reply}, docs/relays.md).
  const address = typeof value.address === 'string' ? value.address : typeof value.relay === 'string' ? value.relay : '';
  const outcome = typeof value.outcome === 'string' ? value.outcome : '';
  const reply = typeof value.reply === 'string' ? value.reply : '';
  return [address, outcome, reply].filter(Boolean).join(' · ');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function DetailValue({ name, value }: { name: string; value: unknown }) {
  if (name === 'durationMs' && typeof value === 'number') return <>{`${value.toLocaleString('en-US')} ms`}</>;
  if (name === 'nextAttemptAt' && typeof value === 'string') return <LocalTime iso={value} />;
  if (Array.isArray(value)) {
    if (value.every((v) => typeof v === 'string')) return <>{value.join(', ')}</>;
    return (
      <ul className="event-detail__list">
        {value.map((item, index) => (
          <li key={index}>{recipientLine(item)}</li>
        ))}
      </ul>
    );
  }
  if (isObject(value)) return <>{JSON.stringify(value)}</>;
  return <>{String(value)}</>;
}

/** An event's detail as labelled fields (the reply, the attempt, each recipient's answer), not raw JSON. */
function EventDetail({ detail }: { detail: MailEvent['detail'] }) {
  if (!detail) return null;
  const entries = Object.entries(detail).filter(([, value]) => value !== null && value !== undefined && value !== '');
  if (entries.length === 0) return null;
  return (
    <dl className="event-detail">
      {entries.map(([name, value]) => (
        <div key={name} className="event-detail__row">
          <dt>{DETAIL_LABELS[name] ?? name}</dt>
          <dd>
            <DetailValue name={name} value={value} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function EventLog({ events }: { events: MailEvent[] }) {
  return (
    <DetailTable columns={['Time', 'Actor', 'Event', 'Status', 'Detail']}>
      {events.map((event, index) => (
        <tr key={index}>
          <td className="nowrap">
            <LocalTime iso={event.at} />
          </td>
          <td>{event.actor}</td>
          <td>{event.type}</td>
          <td className="nowrap">{`${statusName(event.fromStatus)} → ${statusName(event.toStatus)}`}</td>
          <td className="detail-table__detail">
            <EventDetail detail={event.detail} />
          </td>
        </tr>
      ))}
    </DetailTable>
  );
}
