import type { ReactNode } from 'react';
import { formatDate } from '../../lib/format-date';

const DASH = <span className="muted">—</span>;

interface LocalTimeProps {
  iso: string | null | undefined;
  /** Shown without an instant; a dash by default. */
  empty?: ReactNode;
  /**
   * The time may go under its date in a narrow column (a side panel's table beside the list at 1280 px): the
   * line breaks only between the two, never inside the date at its hyphens.
   */
  isBreakable?: boolean;
}

/** An instant in the operator's local time, the exact UTC instant on hover (docs/console.md §10.5); `empty` without one. */
export function LocalTime({ iso, empty = DASH, isBreakable = false }: LocalTimeProps) {
  const at = formatDate(iso);
  if (!at) return empty;
  const space = at.local.indexOf(' ');
  if (!isBreakable || space < 0)
    return (
      <time dateTime={at.utc} title={at.utc}>
        {at.local}
      </time>
    );
  return (
    <time dateTime={at.utc} title={at.utc} className="local-time--breakable">
      <span>{at.local.slice(0, space)}</span> <span>{at.local.slice(space + 1)}</span>
    </time>
  );
}
