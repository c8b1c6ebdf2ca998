import { STATUSES } from '@outbox/contract/status';

interface StatusCellProps {
  status: number;
  /** Recipients the relay refused; with `recipientCount`, a partial failure is marked "N of M rejected". */
  rejectedRecipients?: number | undefined;
  recipientCount?: number | undefined;
}

/**
 * A round 30×30 icon in the status colour, with the status name in text beside it (never colour alone). A mail
 * refused for some of its recipients but not all is not silently green: a small "2 of 4 rejected" goes under
 * the name (docs/console.md).
 */
export function StatusCell({ status, rejectedRecipients = 0, recipientCount = 0 }: StatusCellProps) {
  const info = Number.isInteger(status) ? STATUSES[status] : undefined;
  const name = info?.name ?? `Unknown (${status})`;
  // Only a partial refusal: a mail refused for every recipient already says so by its (red) status.
  const partial =
    rejectedRecipients > 0 && rejectedRecipients < recipientCount ? `${rejectedRecipients} of ${recipientCount} rejected` : null;
  return (
    <span className="status" title={partial ? `${name}, ${partial}` : name}>
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
      </span>
    </span>
  );
}
