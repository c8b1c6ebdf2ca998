import { useState } from 'react';
import { MailStatus, STATUSES } from '@outbox/contract/status';
import { formatDate } from '../../../lib/format-date';

interface StatusCellProps {
  status: number;
  /** Recipients the relay refused; with `recipientCount`, a partial failure is marked "N of M rejected". */
  rejectedRecipients?: number | undefined;
  recipientCount?: number | undefined;
  /** A scheduled send's instant (`sendAt`): a Queued mail not yet due says "scheduled" and when. */
  sendAt?: string | null | undefined;
}

/**
 * A round 30×30 icon in the status colour, with the status name in text beside it (never colour alone). A mail
 * refused for some of its recipients but not all is not silently green: a small "2 of 4 rejected" goes under
 * the name (docs/console.md). A Queued mail scheduled for later says so the same way: "scheduled 2026-12-24 08:00".
 */
export function StatusCell({ status, rejectedRecipients = 0, recipientCount = 0, sendAt = null }: StatusCellProps) {
  const info = Number.isInteger(status) ? STATUSES[status] : undefined;
  const name = info?.name ?? `Unknown (${status})`;
  // Only a partial refusal: a mail refused for every recipient already says so by its (red) status.
  const partial =
    rejectedRecipients > 0 && rejectedRecipients < recipientCount ? `${rejectedRecipients} of ${recipientCount} rejected` : null;
  // "Ahead" as of when the cell was drawn: a mail whose instant passes is claimed, and its row redrawn, soon after.
  const [drawnAt] = useState(Date.now);
  const scheduledFor = status === MailStatus.Queued && sendAt && Date.parse(sendAt) > drawnAt ? formatDate(sendAt) : null;
  // Minutes are enough in the cell; the tooltip has the exact instant in UTC.
  const scheduled = scheduledFor ? `scheduled ${scheduledFor.local.slice(0, 16)}` : null;
  const title = partial ? `${name}, ${partial}` : scheduledFor ? `${name}, scheduled for ${scheduledFor.utc}` : name;
  return (
    <span className="status" title={title}>
      <span
        className="status__icon"
        data-testid="status-icon"
        aria-hidden="true"
        // Size and shape are the stylesheet's (.status__icon): fifty rows set one property each, not four.
        style={{ backgroundColor: info?.hex ?? '#8A8F98' }}
      />
      <span className="status__text">
        <span className="status__name truncate">{name}</span>
        {partial ? <span className="status__rejected truncate">{partial}</span> : null}
        {!partial && scheduled ? <span className="status__scheduled truncate">{scheduled}</span> : null}
      </span>
    </span>
  );
}
