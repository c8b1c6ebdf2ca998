/**
 * A worker process's relay health in the store (docs/relays.md#health): its router's reports (delivery/relay-router.ts)
 * written to `relay_health` after every heartbeat, and at once when a relay's state changes, so that every instance
 * sees a relay go down within moments and its figures within one heartbeat interval.
 *
 * Writes run one at a time, in order, so an older report never overwrites a newer one; a change while a write runs
 * makes one more write after it (coalesced). Nothing is written before the first heartbeat of the process has put its
 * `instances` row (which the rows reference): the write after that beat carries any change made before it. A failed
 * write is logged (the first, then one a minute) and retried by the next beat.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/connection.js';
import type { RelayReport } from './relay-health.js';
import { writeInstanceReports } from './relay-health.repository.js';

export interface RelayHealthPublisherOptions {
  store: Store;
  clock: Clock;
  /** The heartbeat's id: the rows are this process's. */
  instanceId: string;
  /** The router's reports (relay-router.ts `reports()`). */
  reports: () => RelayReport[];
  logger?: Pick<Logger, 'warn'> | undefined;
}

const FAILURE_LOG_EVERY_MS = 60_000;

export function createRelayHealthPublisher(options: RelayHealthPublisherOptions) {
  const { store, clock, instanceId, logger } = options;
  /** The heartbeat has written this process's row: rows may reference it. */
  let isArmed = false;
  let isStopped = false;
  let running: Promise<void> | undefined;
  let isAgainWanted = false;
  let lastFailureLoggedAt = Number.NEGATIVE_INFINITY;

  async function write(): Promise<void> {
    try {
      await store.db.transaction().execute((trx) => writeInstanceReports(trx, instanceId, options.reports(), clock.now()));
    } catch (error) {
      // Until the next beat: the store is away, or the instance row was forgotten while this process hung (the beat puts
      // it back).
      if (Date.now() - lastFailureLoggedAt >= FAILURE_LOG_EVERY_MS) {
        lastFailureLoggedAt = Date.now();
        logger?.warn({ err: error, instanceId }, 'relay health not written; trying again at the next heartbeat');
      }
    }
  }

  function run(): void {
    running = write().finally(() => {
      running = undefined;
      if (isAgainWanted && !isStopped) {
        isAgainWanted = false;
        run();
      }
    });
  }

  function publish(): void {
    if (!isArmed || isStopped) return;
    if (running) isAgainWanted = true;
    else run();
  }

  return {
    /** After each heartbeat written: the figures, and the first write of all. */
    afterBeat(): void {
      isArmed = true;
      publish();
    },
    /** A relay's state changed: written at once (after a write under way). */
    changed: publish,
    /** No more writes; waits for one under way. The rows go with the instance row (heartbeat.stop()). */
    async stop(): Promise<void> {
      isStopped = true;
      while (running) await running;
    },
  };
}

export type RelayHealthPublisher = ReturnType<typeof createRelayHealthPublisher>;
