/**
 * The worker's own moves besides attempt outcomes (those are `outcome-policy.ts`): claiming a mail under a
 * lease, giving it back at a graceful stop, and the lease sweeper's return of mails whose worker stopped
 * answering. Pure builders for `applyTransitions`.
 */
import { MailStatus } from '@outbox/contract';
import type { StatusTransition } from '../mail/transition-types.js';
import { retryAgeFrom, type RetryPolicy } from './retry-policy.js';

/** Queued → Processing under a lease; counts the attempt. No event: the attempt's outcome writes it. */
export function claimTransition(id: number, at: number, lease: { owner: string; expiresAt: number }): StatusTransition {
  return { id, from: [MailStatus.Queued], to: MailStatus.Processing, at, event: null, set: { lease, attempts: 'increment' } };
}

/** Processing → Queued, due now, for a mail this worker still holds when it stops (send in flight, or not begun). */
export function releasedTransition(
  id: number,
  at: number,
  workerId: string,
  reason = 'worker stopped while the send was in flight',
): StatusTransition {
  return {
    id,
    from: [MailStatus.Processing],
    to: MailStatus.Queued,
    at,
    event: { type: 'released', actor: `worker:${workerId}`, detail: { reason } },
    set: { nextAttemptAt: at, lease: null },
    lease: { owner: workerId },
  };
}

export interface ExpiredLease {
  id: number;
  /** Who held it, read before the update (which clears it). */
  lease_owner: string | null;
  attempts: number;
  received_at: number;
  send_at: number | null;
}

/**
 * An expired lease goes back to Queued, due now, or, when the retry budget is spent (a mail that keeps
 * killing or hanging its worker), to Error: a lease that ran out counts as an attempt whose relay never
 * answered. Conditional on the lease still being expired, so a late outcome or another sweeper wins cleanly.
 */
export function leaseExpiredTransition(lease: ExpiredLease, now: number, retryPolicy: RetryPolicy, sweeperId: string): StatusTransition {
  const retries = retryPolicy.decide({ attempts: lease.attempts, receivedAt: retryAgeFrom(lease), now, outcome: 'unreachable' }).retry;
  return {
    id: lease.id,
    from: [MailStatus.Processing],
    to: retries ? MailStatus.Queued : MailStatus.Error,
    at: now,
    event: {
      type: retries ? 'lease-expired' : 'lease-expired-gave-up',
      actor: `sweeper:${sweeperId}`,
      detail: { heldBy: lease.lease_owner, attempt: lease.attempts },
    },
    set: retries
      ? { nextAttemptAt: now, lease: null }
      : { providerReply: 'The worker delivering it stopped answering on every attempt; the retry budget is spent.', lease: null },
    lease: { expiredBy: now },
  };
}

/**
 * A lease whose holder's heartbeat is stale (its process crashed or hangs): released before it runs out, so a
 * crashed worker's mails move again within the heartbeat's staleness (15 s) rather than the lease's 60 s. Counted as
 * an attempt whose relay never answered, like an expired lease. Conditional on that holder still holding it, so an
 * outcome that lands first wins.
 */
export function staleHolderTransition(lease: ExpiredLease, now: number, retryPolicy: RetryPolicy, sweeperId: string): StatusTransition {
  const expired = leaseExpiredTransition(lease, now, retryPolicy, sweeperId);
  return {
    ...expired,
    event: { ...expired.event!, detail: { heldBy: lease.lease_owner, attempt: lease.attempts, reason: 'its instance stopped beating' } },
    lease: { owner: lease.lease_owner ?? '' },
  };
}
