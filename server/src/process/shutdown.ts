/**
 * The graceful stop of the process main.ts started: no new requests or SMTP sessions, in-flight sends finished or
 * returned to the queue, then the store. The order matters, and is why this is one function over every part.
 */
import type { AlertEvaluator } from '../alerts/alert-evaluator.js';
import type { BounceService } from '../bounces/bounce.service.js';
import type { Heartbeat } from '../instances/heartbeat.js';
import type { Store } from '../store/connection.js';
import type { WebhookDispatcher } from '../webhooks/dispatcher.js';
import type { Delivery } from './delivery.js';
import type { RetentionJobs } from './retention-jobs.js';
import type { SmtpListeners } from './smtp-listeners.js';

export interface RunningParts extends SmtpListeners {
  app: { close(): Promise<unknown> };
  store: Store;
  bounces: Pick<BounceService, 'idle'>;
  delivery: Delivery | undefined;
  retentionJobs: RetentionJobs | undefined;
  webhookDispatcher: WebhookDispatcher | undefined;
  heartbeat: Heartbeat;
  alertEvaluator: AlertEvaluator;
  logger: { info(message: string): void };
}

/** The stop: the first call starts it, every call answers the same promise. */
export function createShutdown(parts: RunningParts): () => Promise<void> {
  const { app, store, delivery, retentionJobs, webhookDispatcher, heartbeat, alertEvaluator, smtpListener, bounceListener } = parts;
  let stopping: Promise<void> | undefined;
  return () => {
    stopping ??= (async () => {
      parts.logger.info('shutting down: no new requests or submissions, finishing what is in flight');
      retentionJobs?.stop();
      await alertEvaluator.stop();
      await Promise.all([app.close(), smtpListener?.close(), bounceListener?.close()]);
      await parts.bounces.idle();
      await delivery?.worker.stop();
      await webhookDispatcher?.stop();
      await delivery?.relayHealth.stop();
      // Only now: a worker finishing its sends is still a worker, and the row's going tells the fleet at once (its relay
      // health rows go with it).
      await heartbeat.stop();
      await delivery?.router.close();
      await delivery?.transport.close();
      await delivery?.captureRelay?.close();
      await retentionJobs?.idle();
      await store.close();
    })();
    return stopping;
  };
}
