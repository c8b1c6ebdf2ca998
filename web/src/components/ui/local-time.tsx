import type { ReactNode } from 'react';
import { formatDate } from '../../lib/format-date';

const DASH = <span className="muted">—</span>;

/** An instant in the operator's local time, the exact UTC instant on hover (docs/console.md §10.5); `empty` without one. */
export function LocalTime({ iso, empty = DASH }: { iso: string | null | undefined; empty?: ReactNode }) {
  const at = formatDate(iso);
  return at ? (
    <time dateTime={at.utc} title={at.utc}>
      {at.local}
    </time>
  ) : (
    empty
  );
}
