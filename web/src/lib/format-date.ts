function pad(value: number): string {
  return String(value).padStart(2, '0');
}

export interface FormattedDate {
  /** Operator's local time, e.g. `2026-11-23 14:05:09`. */
  local: string;
  /** The exact instant in UTC (ISO 8601), for the tooltip. */
  utc: string;
}

/** Formats an ISO instant for the table; null or empty input gives null (the cell stays empty). */
export function formatDate(iso: string | null | undefined): FormattedDate | null {
  if (!iso) return null;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return { local: iso, utc: iso };
  const local =
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return { local, utc: date.toISOString() };
}
