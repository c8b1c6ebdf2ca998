import type { ReactNode } from 'react';
import type { MailDetail } from '@outbox/contract';
import { MailStatus } from '@outbox/contract/status';
import { LocalTime } from '../../../components/ui/local-time';
import { StatusCell } from './status-cell';

/** Status, dates, attempts, next attempt, and the lease holder while Processing. */
export function Summary({ mail }: { mail: MailDetail }) {
  const rows: [string, ReactNode][] = [
    ['Status', <StatusCell key="s" status={mail.status} sendAt={mail.sendAt} />],
    ['Received', <LocalTime key="r" iso={mail.receivedDate} />],
    ...(mail.sendAt ? [['Scheduled for', <LocalTime key="a" iso={mail.sendAt} />] as [string, ReactNode]] : []),
    ['Last update', <LocalTime key="u" iso={mail.lastUpdate} />],
    ['Provider sent', <LocalTime key="p" iso={mail.providerSentDate} />],
    ['Attempts', mail.attempts],
    ...(mail.lane ? [['Lane', mail.lane] as [string, ReactNode]] : []),
    ['Next attempt', <LocalTime key="n" iso={mail.nextAttemptAt} />],
  ];
  if (mail.status === MailStatus.Processing) {
    rows.push(['Lease holder', mail.leaseOwner ?? '—'], ['Lease expires', <LocalTime key="l" iso={mail.leaseExpiresAt} />]);
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
