/**
 * The lanes in the worker's claims (docs/lanes.md): bulk's share of each claim, and transactional mail before the
 * bulk mail claimed ahead of it.
 */
import { LANE_CODES } from '@outbox/contract';
import { BULK_SHARE } from '../mail/write/claim.js';
import type { ClaimedMail } from './delivery.repository.js';

/**
 * The bulk lane's share of slots, carried from claim to claim: claims of a slot or two, a busy worker's usual size,
 * would each round the share down to none and starve bulk behind transactional mail.
 */
export function createBulkCredit() {
  /** Bulk slots owed to the next claims: BULK_SHARE of each claim's limit, the fraction left carried over. */
  let credit = 0;
  return {
    /** The bulk mails a claim of `limit` must take at least, when that many are due. */
    takeMinimum(limit: number): number {
      credit += limit * BULK_SHARE;
      const minimum = Math.floor(credit);
      credit -= minimum;
      return minimum;
    },
  };
}

/**
 * Adds claimed mails to those waiting for a slot: transactional mail goes before the bulk mail claimed ahead of it (a
 * claim serves it first, and the ready mails of earlier claims must not hold it back by a whole claim-ahead batch of
 * bulk sends); bulk mail goes last.
 */
export function addByLane(ready: ClaimedMail[], mails: readonly ClaimedMail[]): void {
  const transactional = mails.filter((m) => m.lane === LANE_CODES.transactional);
  if (transactional.length === 0) ready.push(...mails);
  else {
    const firstBulk = ready.findIndex((m) => m.lane !== LANE_CODES.transactional);
    ready.splice(firstBulk === -1 ? ready.length : firstBulk, 0, ...transactional);
    ready.push(...mails.filter((m) => m.lane !== LANE_CODES.transactional));
  }
}
