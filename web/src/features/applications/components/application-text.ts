import type { Application } from '@outbox/contract';

/** `1,234`, or `10,000+` when the server stopped counting at its cap. */
export function mailsText(application: Application): string {
  const count = application.mailsLast24h.toLocaleString('en-US');
  return application.mailsLast24hIsLowerBound ? `${count}+` : count;
}

/** How long an application's final mails keep their content, as the table says it. */
export function contentText(days: number | null): string {
  return days === null ? 'Default' : days === 0 ? 'Removed once final' : `${days} ${days === 1 ? 'day' : 'days'}`;
}

/** `operator:ops` → `ops`; `cli` → `command line`; unknown (keys made before applications were managed) → `—`. */
export function creatorText(createdBy: string | null): string {
  if (createdBy === null) return '—';
  if (createdBy === 'cli') return 'command line';
  return createdBy.replace(/^operator:/, '');
}

/** The grace periods offered when rotating a key, in seconds (the API takes any from 0 to 86,400). */
export const GRACE_CHOICES: ReadonlyArray<{ seconds: number; label: string }> = [
  { seconds: 0, label: 'none: the old key stops at once' },
  { seconds: 300, label: '5 minutes' },
  { seconds: 3_600, label: '1 hour' },
  { seconds: 6 * 3_600, label: '6 hours' },
  { seconds: 86_400, label: '24 hours' },
];
export const DEFAULT_GRACE_SECONDS = 3_600;
