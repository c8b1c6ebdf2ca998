const counts = new Intl.NumberFormat('en-US');
export const formatCount = (value: number) => counts.format(value);

/** A ratio as a percentage with one decimal at most; — when there is none (nothing sent). */
export function formatPercent(ratio: number | null): string {
  if (ratio === null) return '—';
  return `${Math.round(ratio * 1000) / 10}%`;
}

/** A latency in ms, in the unit that reads best: 850 ms, 2.5 s, 4 min, 1.5 h. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 6_000) / 10} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}

const hourFormat = new Intl.DateTimeFormat('en-GB', { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
const dayFormat = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

/** A bucket's start: an hour in local time, a day as the UTC day it is. */
export const formatBucket = (bucket: 'hour' | 'day') => (ms: number) => (bucket === 'hour' ? hourFormat : dayFormat).format(ms);
