import { Fragment } from 'react';
import type { BounceReport, MailDetail, RecipientDelivery, RecipientOutcome } from '@outbox/contract';
import { LocalTime } from '../../../components/ui/local-time';
import { DetailTable } from './mail-detail-table';

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
