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
 * What the worker line says, from the heartbeats (docs/console.md §10.14): "No worker running" exactly when no live
 * worker heartbeat exists, an alarm when due mails wait; otherwise how many workers run.
 */
export function workerLine(health: QueueHealth): { kind: 'running' | 'none' | 'alarm'; text: string } {
  const workers = health.liveWorkers;
  if (workers > 0) return { kind: 'running', text: `${count(workers)} ${workers === 1 ? 'worker' : 'workers'}` };
  if (health.dueNow === 0) return { kind: 'none', text: 'No worker running' };
  return { kind: 'alarm', text: `No worker running: ${count(health.dueNow)} due ${health.dueNow === 1 ? 'mail waits' : 'mails wait'}` };
}

export const count = (value: number) => value.toLocaleString('en-US');

/** "Relay down: sendgrid-eu", "Relays down: eu, us"; null when none is (or the server does not say). */
export function relaysDownText(health: QueueHealth): string | null {
  const names = health.relaysDown ?? [];
  if (names.length === 0) return null;
  return `${names.length === 1 ? 'Relay down' : 'Relays down'}: ${names.join(', ')}`;
}
