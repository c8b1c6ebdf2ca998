import type { ReactNode } from 'react';
import type { MailDetail, MailEvent } from '@outbox/contract';
import { MailStatus, STATUSES } from '@outbox/contract/status';
import { formatDate } from '../../../lib/format-date';
import { StatusCell } from './status-cell';

function When({ value }: { value: string | null }) {
  const formatted = formatDate(value);
  return formatted ? (
    <time dateTime={formatted.utc} title={formatted.utc}>
      {formatted.local}
    </time>
  ) : (
    <span className="muted">—</span>
  );
}

const statusName = (code: number | null) => (code === null ? '—' : (STATUSES[code]?.name ?? String(code)));

/** Status, dates, attempts, next attempt, and the lease holder while Processing. */
export function Summary({ mail }: { mail: MailDetail }) {
  const rows: [string, ReactNode][] = [
    ['Status', <StatusCell key="s" status={mail.status} />],
    ['Received', <When key="r" value={mail.receivedDate} />],
    ['Last update', <When key="u" value={mail.lastUpdate} />],
    ['Provider sent', <When key="p" value={mail.providerSentDate} />],
    ['Attempts', mail.attempts],
    ['Next attempt', <When key="n" value={mail.nextAttemptAt} />],
  ];
  if (mail.status === MailStatus.Processing) {
    rows.push(['Lease holder', mail.leaseOwner ?? '—'], ['Lease expires', <When key="l" value={mail.leaseExpiresAt} />]);
  }
  rows.push(['Message-ID', mail.messageId], ['Size', mail.sizeBytes === null ? '—' : `${mail.sizeBytes.toLocaleString('en-US')} bytes`]);
  return (
    <dl className="facts">
      {rows.map(([label, value]) => (
        <div key={label} className="facts__row">
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * Each recipient's outcome, as far as the API tells it today: the addresses the relay refused are listed in the
 * delivery event (`rejectedRecipients`); a finished mail's other recipients were accepted, or all refused when
 * the provider refused the mail; a mail still in the queue has them pending.
 */
function outcomeOf(mail: MailDetail, address: string): string {
  const delivered = [...mail.events].reverse().find((event) => event.type === 'sent' || event.type === 'rejected');
  const refused = delivered?.detail?.rejectedRecipients;
  if (Array.isArray(refused) && refused.some((entry) => String(entry).toLowerCase() === address.toLowerCase())) return 'rejected';
  if (mail.status === MailStatus.ProviderSent) return 'accepted';
  if (mail.status === MailStatus.ProviderError) return 'rejected';
  if (mail.status === MailStatus.Error || mail.status === MailStatus.Dequeued) return 'not sent';
  return 'pending';
}

export function Recipients({ mail }: { mail: MailDetail }) {
  const groups = [
    ['To', mail.to],
    ['Cc', mail.cc],
    ['Bcc', mail.bcc],
  ] as const;
  return (
    <table className="detail-table">
      <thead>
        <tr>
          <th scope="col">Kind</th>
          <th scope="col">Recipient</th>
          <th scope="col">Outcome</th>
        </tr>
      </thead>
      <tbody>
        {groups.flatMap(([kind, list]) =>
          list.map((recipient, index) => (
            <tr key={`${kind}-${index}`}>
              <td>{kind}</td>
              <td>
                {recipient.recipientName ? `${recipient.recipientName} | ` : ''}
                {recipient.recipientMail}
              </td>
              <td>{outcomeOf(mail, recipient.recipientMail)}</td>
            </tr>
          )),
        )}
      </tbody>
    </table>
  );
}

function detailText(event: MailEvent): string {
  if (!event.detail) return '';
  return Object.entries(event.detail)
    .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join('; ');
}

export function EventLog({ events }: { events: MailEvent[] }) {
  return (
    <table className="detail-table">
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Actor</th>
          <th scope="col">Event</th>
          <th scope="col">Status</th>
          <th scope="col">Detail</th>
        </tr>
      </thead>
      <tbody>
        {events.map((event, index) => (
          <tr key={index}>
            <td className="nowrap">
              <When value={event.at} />
            </td>
            <td>{event.actor}</td>
            <td>{event.type}</td>
            <td className="nowrap">{`${statusName(event.fromStatus)} → ${statusName(event.toStatus)}`}</td>
            <td className="detail-table__detail">{detailText(event)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Headers({ headers }: { headers: MailDetail['headers'] }) {
  return (
    <dl className="headers">
      {headers.map((header, index) => (
        <div key={index} className="headers__row">
          <dt>{header.name}</dt>
          <dd>{header.value}</dd>
        </div>
      ))}
    </dl>
  );
}
