import { Fragment, type ReactNode } from 'react';
import type {
  BounceReport,
  MailAttachment,
  MailDetail,
  MailEvent,
  RecipientDelivery,
  RecipientOutcome,
  WebhookDelivery,
} from '@outbox/contract';
import { MailStatus, STATUSES } from '@outbox/contract/status';
import { LocalTime } from '../../../components/ui/local-time';
import { StatusCell } from './status-cell';

/** A table of the drawer: its column headers, then the rows given. */
function DetailTable({ columns, children }: { columns: readonly string[]; children: ReactNode }) {
  return (
    <table className="detail-table">
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}

/**
 * Where the bodies, attachments and headers were, once content retention removed them: when, and what is kept.
 * Plain text in a labelled section, so a screen reader reads it where a sighted operator looks for the body.
 */
export function ContentRemoved({ at }: { at: string }) {
  return (
    <section aria-labelledby="d-content">
      <h3 id="d-content">Content</h3>
      <p>
        Content removed on <LocalTime iso={at} />.
      </p>
      <p className="muted">
        Content retention removed its message, bodies, attachments and headers; the sender, recipients, status, dates and event log are
        kept. It cannot be requeued or downloaded.
      </p>
    </section>
  );
}

const statusName = (code: number | null) => (code === null ? '—' : (STATUSES[code]?.name ?? String(code)));

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

const KIND_LABELS = { to: 'To', cc: 'Cc', bcc: 'Bcc', envelope: 'Envelope' } as const;

/** What each outcome means to an operator (docs/lifecycle.md §4). */
const OUTCOME_LABELS: Record<RecipientOutcome, string> = {
  pending: 'pending',
  accepted: 'accepted',
  rejected: 'rejected',
  deferred: 'deferred (will be retried)',
  bounced: 'bounced (after the relay accepted it)',
  complained: 'complained',
  suppressed: 'suppressed (not sent: on the suppression list)',
};

/**
 * Rows of the recipients table: every To, Cc and Bcc recipient with its own outcome, then the envelope
 * addresses that are in none of them (an SMTP submission's Bcc, whose header was removed). An older answer
 * without `recipients` shows the header recipients with no outcome.
 */
function recipientRows(mail: MailDetail): RecipientDelivery[] {
  if (!mail.recipients) {
    const plain = (kind: 'to' | 'cc' | 'bcc', list: MailDetail['to']) =>
      list.map((r) => ({ kind, ...r, outcome: null, reply: null, updatedAt: null }));
    return [...plain('to', mail.to), ...plain('cc', mail.cc), ...plain('bcc', mail.bcc)];
  }
  const order = { to: 0, cc: 1, bcc: 2, envelope: 3 };
  const named = new Set(mail.recipients.filter((r) => r.kind !== 'envelope').map((r) => r.recipientMail.toLowerCase()));
  return mail.recipients
    .filter((r) => r.kind !== 'envelope' || !named.has(r.recipientMail.toLowerCase()))
    .sort((a, b) => order[a.kind] - order[b.kind]);
}

function OutcomeCell({ recipient }: { recipient: RecipientDelivery }) {
  if (recipient.outcome === null) {
    return (
      <span className="muted" title="Not an envelope address, or delivered before outcomes were kept per recipient">
        —
      </span>
    );
  }
  return <span className={`outcome outcome--${recipient.outcome}`}>{OUTCOME_LABELS[recipient.outcome]}</span>;
}

/** What a bounce or complaint report said about one recipient, as the drawer shows it under that recipient. */
export interface RecipientReport {
  receivedAt: string;
  fields: [string, string][];
}

/**
 * The report that made this recipient bounced or complained (docs/bounces.md): the latest of the mail's reports
 * whose outcome for the address is the recipient's. A DSN gives its status code, action and diagnostic; a
 * complaint its Feedback-Type and the complainer's agent. undefined for any other outcome, or when the report
 * is not in the answer (a mail of an older server).
 */
export function reportForRecipient(reports: BounceReport[] | undefined, recipient: RecipientDelivery): RecipientReport | undefined {
  if (recipient.outcome !== 'bounced' && recipient.outcome !== 'complained') return undefined;
  const address = recipient.recipientMail.toLowerCase();
  const report = (reports ?? []).findLast((r) =>
    r.summary.applied.some((a) => a.recipient.toLowerCase() === address && a.outcome === recipient.outcome),
  );
  if (!report) return undefined;
  const fields: [string, string][] = [];
  const block = report.summary.recipients.find((r) => r.recipient.toLowerCase() === address);
  if (block) {
    fields.push(['Status', block.status], ['Action', block.action], ['Diagnostic', block.diagnostic ?? '(none given)']);
  }
  if (report.summary.feedback) {
    fields.push(['Feedback type', report.summary.feedback.type]);
    if (report.summary.feedback.userAgent) fields.push(['Reported by', report.summary.feedback.userAgent]);
  }
  return { receivedAt: report.receivedAt, fields };
}

/** The report under a bounced or complained recipient's row: what came back, and when (docs/console.md §10.10). */
function ReportRow({ recipient, report }: { recipient: RecipientDelivery; report: RecipientReport }) {
  const noun = recipient.outcome === 'complained' ? 'Complaint' : 'Bounce report';
  return (
    <tr className="detail-table__report">
      <td />
      <td colSpan={3}>
        <dl className="report" aria-label={`${noun} for ${recipient.recipientMail}`}>
          <div className="report__field">
            <dt>{`${noun} received`}</dt>
            <dd>
              <LocalTime iso={report.receivedAt} />
            </dd>
          </div>
          {report.fields.map(([label, value]) => (
            <div key={label} className="report__field">
              <dt>{label}</dt>
              <dd className={label === 'Diagnostic' || label === 'Status' ? 'mono' : undefined}>{value}</dd>
            </div>
          ))}
        </dl>
      </td>
    </tr>
  );
}

/**
 * Each recipient with what the relay said about it, and under a bounced or complained one the report that came
 * back; "N of M rejected" names a partial failure, bounced recipients counted in (docs/console.md).
 */
export function Recipients({ mail }: { mail: MailDetail }) {
  const rows = recipientRows(mail);
  const rejected = mail.rejectedRecipients ?? 0;
  return (
    <>
      {rejected > 0 ? (
        <p className="recipients__summary" role="note">
          {`${rejected} of ${mail.recipientCount ?? rows.length} recipients rejected`}
        </p>
      ) : null}
      <DetailTable columns={['Kind', 'Recipient', 'Outcome', 'Provider reply']}>
        {rows.map((recipient, index) => {
          const report = reportForRecipient(mail.bounces, recipient);
          return (
            <Fragment key={`${recipient.kind}-${index}`}>
              <tr>
                <td>{KIND_LABELS[recipient.kind]}</td>
                <td>
                  {recipient.recipientName ? `${recipient.recipientName} | ` : ''}
                  {recipient.recipientMail}
                </td>
                <td className="nowrap">
                  <OutcomeCell recipient={recipient} />
                </td>
                <td className="mono detail-table__detail">{recipient.reply ?? ''}</td>
              </tr>
              {report ? <ReportRow recipient={recipient} report={report} /> : null}
            </Fragment>
          );
        })}
      </DetailTable>
    </>
  );
}

const byteFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

/** 1,234 bytes; 12.5 KiB; 3.2 MiB: the decoded size of the file. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${byteFormat.format(bytes)} ${bytes === 1 ? 'byte' : 'bytes'}`;
  if (bytes < 1024 * 1024) return `${byteFormat.format(bytes / 1024)} KiB`;
  return `${byteFormat.format(bytes / (1024 * 1024))} MiB`;
}

/** The message's attachments by name, type and size; their bytes are in the .eml download. */
export function Attachments({ attachments }: { attachments: MailAttachment[] }) {
  return (
    <DetailTable columns={['Name', 'Type', 'Size']}>
      {attachments.map((attachment, index) => (
        <tr key={index}>
          <td className="detail-table__detail">
            {attachment.filename ?? <span className="muted">(no name)</span>}
            {attachment.disposition === 'inline' ? <span className="muted"> (inline)</span> : null}
          </td>
          <td className="mono">{attachment.contentType}</td>
          <td className="nowrap" title={`${attachment.size.toLocaleString('en-US')} bytes`}>
            {formatSize(attachment.size)}
          </td>
        </tr>
      ))}
    </DetailTable>
  );
}

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
