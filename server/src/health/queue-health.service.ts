/**
 * Queue health: is mail flowing, and is any worker running? The mail figures come
 * from the status counters and index ranges only (queue-health.repository.ts), so a console may poll it every
 * few seconds at 1M mails.
 *
 * Whether a worker runs comes from the heartbeats (instances/): `liveWorkers` counts instances with the worker
 * role whose heartbeat is live, and `hasLiveWorker` is `liveWorkers > 0` (as is `workerActiveLastMinute`, its old name,
 * kept for older clients). So
 * "No worker running" is true exactly when no live worker heartbeat exists (docs/api.md, queue health), idle
 * or not. `lastWorkerActivityAt` still reports the newest claim or outcome, which a heartbeat cannot tell.
 */
import { MailStatus } from '@outbox/contract';
import type { QueueHealth } from '@outbox/contract';
import type { Clock } from '../clock.js';
import type { InstanceService } from '../instances/instance.service.js';
import type { RelayHealthService } from '../relays/relay-health.service.js';
import * as mailRepo from '../mail/mail.repository.js';
import type { Store } from '../store/connection.js';
import * as repo from './queue-health.repository.js';
import { failureRate } from '../alerts/rates.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const WORKER_STATUSES = [MailStatus.Processing, MailStatus.ProviderSent, MailStatus.ProviderError, MailStatus.Error];

export function createQueueHealthService({
  store,
  clock,
  instances,
  relayHealth,
}: {
  store: Store;
  clock: Clock;
  instances: InstanceService;
  /** The relays a live worker reports down (relays/relay-health.service.ts); left out, queue health names none. */
  relayHealth?: Pick<RelayHealthService, 'listRelaysDown'>;
}) {
  const { db } = store;

  async function queueHealth(): Promise<QueueHealth> {
    const now = clock.now();
    const [counts, notDue, oldest, deliveredLastMinute, deliveredLastHour, providerErrors, errors, latest, fleet, relaysDown] =
      await Promise.all([
        mailRepo.getStatusCounts(db),
        repo.countQueuedNotDue(db, now),
        mailRepo.findOldestReceivedAt(db, MailStatus.Queued, now),
        repo.countDeliveredSince(db, now - MINUTE),
        repo.countDeliveredSince(db, now - HOUR),
        repo.countChangedSince(db, MailStatus.ProviderError, now - HOUR),
        repo.countChangedSince(db, MailStatus.Error, now - HOUR),
        Promise.all(WORKER_STATUSES.map((status) => repo.findLatestChange(db, status))),
        instances.countInstances(),
        relayHealth ? relayHealth.listRelaysDown() : undefined,
      ]);
    const queued = counts.get(MailStatus.Queued) ?? 0;
    const failedLastHour = providerErrors + errors;
    const lastActivity = latest.reduce<number | undefined>(
      (max, at) => (at !== undefined && (max === undefined || at > max) ? at : max),
      undefined,
    );
    return {
      at: new Date(now).toISOString(),
      queued,
      dueNow: Math.max(0, queued - notDue),
      oldestQueuedAt: oldest === undefined ? null : new Date(oldest).toISOString(),
      oldestQueuedAgeSeconds: oldest === undefined ? null : Math.max(0, Math.floor((now - oldest) / 1000)),
      inFlight: counts.get(MailStatus.Processing) ?? 0,
      deliveredLastMinute,
      deliveredLastHour,
      failedLastHour,
      failureRateLastHour: failureRate(failedLastHour, deliveredLastHour),
      lastWorkerActivityAt: lastActivity === undefined ? null : new Date(lastActivity).toISOString(),
      hasLiveWorker: fleet.liveWorkers > 0,
      workerActiveLastMinute: fleet.liveWorkers > 0,
      liveWorkers: fleet.liveWorkers,
      ...(relaysDown ? { relaysDown } : {}),
    };
  }

  return { queueHealth };
}

export type QueueHealthService = ReturnType<typeof createQueueHealthService>;
