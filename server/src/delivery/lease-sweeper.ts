/**
 * The lease sweeper's store work: every mail whose lease ran out (its worker died or hung), or whose holder's
 * heartbeat went stale (its process crashed: no need to wait out the lease), goes back to Queued, or to Error once
 * its retry budget is spent (lease-transitions.ts), in one transaction.
 */
import { applyTransitions } from '../mail/write/apply.js';
import type { DbOrTrx } from '../store/connection.js';
import { listExpiredLeases, listLeasesOfStaleInstances } from './delivery.repository.js';
import type { RetryPolicy } from './retry-policy.js';
import { leaseExpiredTransition, staleHolderTransition, type ExpiredLease } from './lease-transitions.js';

/** Call inside a transaction. Returns the leases released, with the status each mail went to. */
export async function releaseExpiredLeases(
  trx: DbOrTrx,
  now: number,
  retryPolicy: RetryPolicy,
  sweeperId: string,
): Promise<Array<ExpiredLease & { toStatus: number }>> {
  const expired = await listExpiredLeases(trx, now);
  const orphaned = await listLeasesOfStaleInstances(trx, now, sweeperId);
  if (expired.length === 0 && orphaned.length === 0) return [];
  const transitions = [
    ...expired.map((lease) => leaseExpiredTransition(lease, now, retryPolicy, sweeperId)),
    ...orphaned.map((lease) => staleHolderTransition(lease, now, retryPolicy, sweeperId)),
  ];
  const { moved } = await applyTransitions(trx, transitions);
  const byId = new Map([...expired, ...orphaned].map((lease) => [lease.id, lease]));
  return moved.map((m) => ({ ...byId.get(m.id)!, toStatus: m.to as number }));
}
