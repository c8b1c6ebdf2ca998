import { formatDate } from '../../../lib/format-date';

/** Local time in the cell; the exact UTC instant is the cell's tooltip (set by the caller on the cell). */
export function DateText({ value }: { value: string | null }) {
  const formatted = formatDate(value);
  if (!formatted) return null;
  return (
    <time className="truncate" dateTime={formatted.utc}>
      {formatted.local}
    </time>
  );
}
