/**
 * The Overview's ranges (docs/console.md §10.21): the last 24 hours, 7 days, 30 days, or local days from–to.
 * Hourly buckets up to 7 days, daily beyond, so a chart holds at most 168 hours or one point a day.
 */
export type RangeChoice = '24h' | '7d' | '30d' | 'custom';
/** What the Overview shows when it opens. */
export const DEFAULT_RANGE: RangeChoice = '24h';

export interface StatsRange {
  /** ISO instants; `to` exclusive. */
  from: string;
  to: string;
  bucket: 'hour' | 'day';
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The longest span drawn hour by hour. */
export const HOURLY_UP_TO_MS = 7 * DAY_MS;
/** As the server allows (STATISTICS_MAX_RANGE_DAYS). */
export const MAX_RANGE_DAYS = 400;

export const RANGE_CHOICES: ReadonlyArray<{ value: RangeChoice; label: string }> = [
  { value: '24h', label: '24 h' },
  { value: '7d', label: '7 d' },
  { value: '30d', label: '30 d' },
  { value: 'custom', label: 'Custom' },
];

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The start of a local calendar day `YYYY-MM-DD` (ms), or NaN. */
function localDayStart(day: string): number {
  if (!DAY.test(day)) return Number.NaN;
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  return new Date(y, m - 1, d).getTime();
}

/**
 * The range of a choice at `now`: the fixed ones end with the bucket now is in (the current hour or UTC day,
 * so the last point is the one still filling); a custom range covers its local days, both inclusive.
 * A custom range that is not one (a day missing, `to` before `from`, over 400 days) gives an error to show.
 */
export function rangeOf(choice: RangeChoice, now: number, custom: { from: string; to: string }): StatsRange | { error: string } {
  if (choice === '24h' || choice === '7d') {
    const to = Math.ceil((now + 1) / HOUR_MS) * HOUR_MS;
    const span = choice === '24h' ? DAY_MS : 7 * DAY_MS;
    return { from: new Date(to - span).toISOString(), to: new Date(to).toISOString(), bucket: 'hour' };
  }
  if (choice === '30d') {
    const to = Math.ceil((now + 1) / DAY_MS) * DAY_MS;
    return { from: new Date(to - 30 * DAY_MS).toISOString(), to: new Date(to).toISOString(), bucket: 'day' };
  }
  const from = localDayStart(custom.from);
  const lastDay = localDayStart(custom.to);
  if (Number.isNaN(from) || Number.isNaN(lastDay)) return { error: 'Choose the first and the last day.' };
  if (lastDay < from) return { error: 'The last day is before the first.' };
  const [y, m, d] = custom.to.split('-').map(Number) as [number, number, number];
  const to = new Date(y, m - 1, d + 1).getTime();
  if (to - from > MAX_RANGE_DAYS * DAY_MS) return { error: `A range is at most ${MAX_RANGE_DAYS} days.` };
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), bucket: to - from <= HOURLY_UP_TO_MS ? 'hour' : 'day' };
}

/** A local calendar day `YYYY-MM-DD` of an instant (the custom fields' defaults). */
export function localDay(ms: number): string {
  const date = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}
