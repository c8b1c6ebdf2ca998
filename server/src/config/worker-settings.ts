/** The delivery worker's settings: whether it runs, its leases, concurrency, polling and retry budget. */
import type { EnvReader } from './env-reader.js';

export interface WorkerSettings {
  worker: boolean;
  leaseSeconds: number;
  /** Sends in flight at once per worker process. */
  workerConcurrency: number;
  /** How long an idle worker sleeps before it looks for due mail again when nothing wakes it. */
  workerIdlePollMs: number;
  /** The retry budget for 4xx replies and an unreachable relay: attempts (the first included) and age. */
  retryMaxAttempts: number;
  retryMaxAgeMs: number;
  /** The first retry's delay; each further one doubles, up to an hour. */
  retryBaseDelayMs: number;
}

export function readWorkerSettings({ onOff, integer, boundedDurationMs, durationMs }: EnvReader): WorkerSettings {
  return {
    worker: onOff('WORKER', true),
    leaseSeconds: integer('LEASE_SECONDS', 60, 1, 86400),
    workerConcurrency: integer('WORKER_CONCURRENCY', 50, 1, 1000),
    workerIdlePollMs: boundedDurationMs('WORKER_IDLE_POLL', 1_000, 10, 60_000, '10ms to 60s'),
    retryMaxAttempts: integer('RETRY_MAX_ATTEMPTS', 8, 1, 1000),
    retryMaxAgeMs: durationMs('RETRY_MAX_AGE', 24 * 3_600_000),
    retryBaseDelayMs: durationMs('RETRY_BASE_DELAY', 30_000),
  };
}
