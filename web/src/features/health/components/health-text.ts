import type { QueueHealth } from '@outbox/contract';

/** 0 s, 59 s, 12 min, 3 h 5 min, 2 d 4 h: the oldest Queued mail's age at a glance. */
export function formatAge(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** 0.0123 → "1.2 %"; null (nothing finished in the hour) → "—". */
export function formatRate(rate: number | null): string {
  if (rate === null) return '—';
  const percent = rate * 100;
  return `${percent >= 10 || percent === 0 ? percent.toFixed(0) : percent.toFixed(1)} %`;
}

/**
 * What the worker line says. Without a heartbeat, an idle worker on an empty queue is not seen, so "no worker"
 * is said only while due mails wait (docs/api.md, queue health).
 */
export function workerState(health: QueueHealth): 'active' | 'idle' | 'missing' {
  if (health.workerActiveLastMinute) return 'active';
  return health.dueNow > 0 ? 'missing' : 'idle';
}
