/**
 * The leases of one worker (docs/lifecycle.md): those of its sends under way, renewed while a send lasts, so a relay
 * that takes its ten minutes to answer the end of DATA gets the mail once; those it gives back to Queued at once
 * (a stop, a lease running low, the store away) instead of waiting for them to expire; and the sweep that returns
 * every expired lease, or one of a process whose heartbeat is stale, to the queue.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { applyTransitions } from '../mail/write/apply.js';
import { renewLeases } from '../mail/write/claim.js';
import type { Store } from '../store/connection.js';
import * as repository from './delivery.repository.js';
import { releaseExpiredLeases } from './lease-sweeper.js';
import { releasedTransition } from './lease-transitions.js';
import type { RetryPolicy } from './retry-policy.js';

export interface WorkerLeasesOptions {
  store: Store;
  clock: Clock;
  retryPolicy: RetryPolicy;
  workerId: string;
  leaseMs: number;
  /** How often expired leases are looked for. */
  sweepIntervalMs: number;
  logger?: Logger | undefined;
  /** Told about the mails whose lease was given back or swept. */
  onChange?: ((ids: number[]) => void) | undefined;
  /** Called when a sweep returned mails: they may be claimed at once. */
  onSwept(): void;
}

export function createWorkerLeases(options: WorkerLeasesOptions) {
  const { store, clock, retryPolicy, workerId, leaseMs, logger } = options;
  /** How often the leases of sends under way are looked at; those with less than half the lease left are renewed. */
  const renewIntervalMs = Math.max(50, leaseMs / 4);
  /**
   * Mails whose send is under way, by id, with the lease this worker holds on each. A send may outlast its lease
   * (a relay has ten minutes to answer the end of DATA): its lease is renewed meanwhile, so the sweeper never hands
   * it to another worker while this one still sends it.
   */
  const sending = new Map<number, repository.ClaimedMail>();
  /** The renewal under way, if any: an outcome waits for it, so it is recorded under the lease the store holds. */
  let renewing: Promise<void> | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let renewTimer: NodeJS.Timeout | undefined;

  /**
   * Renews the leases of sends under way that have less than half the lease left. A lease the store no longer
   * holds for this worker (the sweeper released it while this process stalled) is not renewed: that send may be
   * repeated by another worker, the at-least-once case of docs/lifecycle.md.
   */
  async function renewRunningLeases(): Promise<void> {
    const now = clock.now();
    const due = [...sending.values()].filter((m) => m.lease_expires_at !== null && m.lease_expires_at - now < leaseMs / 2);
    if (due.length === 0) return;
    const expiresAt = now + leaseMs;
    const renewed = await renewLeases(
      store.db,
      workerId,
      due.map((m) => ({ id: m.id, heldUntil: m.lease_expires_at! })),
      expiresAt,
    );
    for (const mail of due) if (renewed.has(mail.id)) mail.lease_expires_at = expiresAt;
    const lost = due.filter((m) => !renewed.has(m.id)).map((m) => m.id);
    if (lost.length > 0) logger?.warn({ mailIds: lost }, 'a send outlasted its lease, which was released meanwhile: it may be sent again');
  }

  async function sweepExpiredLeases(): Promise<number> {
    const now = clock.now();
    const released = await store.db.transaction().execute((trx) => releaseExpiredLeases(trx, now, retryPolicy, workerId));
    if (released.length > 0) {
      logger?.warn(
        { mailIds: released.map((r) => r.id), heldBy: [...new Set(released.map((r) => r.lease_owner))] },
        'mails whose lease expired: returned to the queue, or ended where their retry budget is spent',
      );
      options.onChange?.(released.map((r) => r.id));
      options.onSwept();
    }
    return released.length;
  }

  return {
    sweepExpiredLeases,
    /** A send begins: its lease is renewed until `letGo`. */
    hold(mail: repository.ClaimedMail): void {
      sending.set(mail.id, mail);
    },
    letGo(id: number): void {
      sending.delete(id);
    },
    /** The renewal under way, if any: a send's outcome waits for it, since it may have taken the mail in. */
    renewal(): Promise<void> | undefined {
      return renewing;
    },
    /** Starts the sweeps and the renewals. */
    start(): void {
      sweepTimer = setInterval(() => {
        sweepExpiredLeases().catch((error: unknown) => logger?.error({ err: error }, 'lease sweep failed'));
      }, options.sweepIntervalMs);
      sweepTimer.unref();
      renewTimer = setInterval(() => {
        if (renewing || sending.size === 0) return;
        renewing = renewRunningLeases()
          .catch((error: unknown) => logger?.error({ err: error }, 'lease renewal failed'))
          .finally(() => {
            renewing = undefined;
          });
      }, renewIntervalMs);
      renewTimer.unref();
    },
    stopSweeping(): void {
      if (sweepTimer) clearInterval(sweepTimer);
    },
    /** Stops the renewals once the sends are done, and waits for one under way. */
    async stopRenewing(): Promise<void> {
      if (renewTimer) clearInterval(renewTimer);
      await renewing;
    },
    /**
     * Mails this worker holds go back to Queued at once instead of waiting for their lease to expire: the given
     * ids (claimed ahead, never sent), or every mail it still holds (sends still running at a stop).
     */
    async release(ids: number[] | 'all', reason: string): Promise<void> {
      const now = clock.now();
      const released = await store.db.transaction().execute(async (trx) => {
        const held = ids === 'all' ? await repository.listLeasesOf(trx, workerId) : ids;
        const { moved } = await applyTransitions(
          trx,
          held.map((id) => releasedTransition(id, now, workerId, reason)),
        );
        return moved.map((m) => m.id);
      });
      logger?.warn({ mailIds: released, reason }, 'stopped holding mails: returned them to the queue');
      if (released.length > 0) options.onChange?.(released);
    },
  };
}

export type WorkerLeases = ReturnType<typeof createWorkerLeases>;
