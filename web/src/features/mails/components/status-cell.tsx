import { STATUSES } from '@outbox/contract/status';
import { STATUS_ICON_SIZE } from './table-layout';

/** A round 30×30 icon in the status colour, with the status name in text beside it (never colour alone). */
export function StatusCell({ status }: { status: number }) {
  const info = Number.isInteger(status) ? STATUSES[status] : undefined;
  const name = info?.name ?? `Unknown (${status})`;
  return (
    <span className="status" title={name}>
      <span
        className="status__icon"
        data-testid="status-icon"
        aria-hidden="true"
        style={{
          width: STATUS_ICON_SIZE,
          height: STATUS_ICON_SIZE,
          borderRadius: '50%',
          backgroundColor: info?.hex ?? '#8A8F98',
        }}
      />
      <span className="status__name truncate">{name}</span>
    </span>
  );
}
