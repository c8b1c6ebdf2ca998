import { Type, type Static } from '@sinclair/typebox';
import { Instant } from './common.js';

/** `GET /api/v1/queue/health`: is mail flowing? Every figure is a counter or an index range (cheap at 1M). */
export const QueueHealth = Type.Object({
  at: Type.String({ format: 'date-time', description: 'When these figures were taken' }),
  queued: Type.Integer({ description: 'Mails Queued (exact, from the counters)' }),
  dueNow: Type.Integer({ description: 'Queued mails whose next attempt is due now' }),
  oldestQueuedAt: Instant,
  oldestQueuedAgeSeconds: Type.Union([Type.Integer(), Type.Null()], { description: 'Age of the oldest Queued mail (since acceptance)' }),
  inFlight: Type.Integer({ description: 'Mails Processing: claimed by a worker, send under way' }),
  deliveredLastMinute: Type.Integer(),
  deliveredLastHour: Type.Integer(),
  failedLastHour: Type.Integer({ description: 'Mails that became ProviderError or Error in the last hour and still are' }),
  failureRateLastHour: Type.Union([Type.Number(), Type.Null()], {
    description: 'failedLastHour / (failedLastHour + deliveredLastHour); null when neither happened',
  }),
  lastWorkerActivityAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'The latest claim or attempt outcome of any worker, on any instance',
  }),
  hasLiveWorker: Type.Boolean({
    description: 'A worker is running: liveWorkers > 0 (a worker heartbeat within its stale threshold, 15 s by default)',
  }),
  workerActiveLastMinute: Type.Boolean({
    description: 'Kept for older clients, under its old name: the same as hasLiveWorker (it no longer looks at the last minute)',
  }),
  liveWorkers: Type.Integer({
    description: 'Instances with the worker role whose heartbeat is live (GET /api/v1/instances). 0: no worker is running',
  }),
  relaysDown: Type.Optional(
    Type.Array(Type.String(), {
      description: 'Relays a live worker reports down (GET /api/v1/relays/health), by name; the health strip names them',
    }),
  ),
});
export type QueueHealth = Static<typeof QueueHealth>;

export const QueueHealthResponse = Type.Object({ data: Type.Array(QueueHealth) });
export type QueueHealthResponse = Static<typeof QueueHealthResponse>;
