/**
 * What a recipient's outcome means for its mail (docs/lifecycle.md, docs/bounces.md): one rule for the worker's
 * attempt outcome (delivery/outcome-policy.ts) and for the reports that come back after it (bounces/bounce.service.ts).
 */
import type { RecipientOutcome } from '../store/schema.js';

/** Not finished: to be tried (pending, or null, an outcome from before per-recipient outcomes) or tried again (deferred). */
export const isOpen = (outcome: RecipientOutcome | null): boolean => outcome === null || outcome === 'pending' || outcome === 'deferred';

/**
 * Delivered: the relay took it, and a complaint about it since does not undo that (only a delivered mail is
 * complained about). Asked of finished mails, where a null outcome is one recorded before per-recipient outcomes
 * on a mail that was sent.
 */
export const isDelivered = (outcome: RecipientOutcome | null): boolean =>
  outcome === 'accepted' || outcome === 'complained' || outcome === null;

/**
 * Refused for good: by the relay (rejected), or by the recipient's own server after the relay took it (bounced).
 * The mail's `rejected_recipients`, the list's mixed-outcome marker, counts these.
 */
export const isRefused = (outcome: RecipientOutcome | null): boolean => outcome === 'rejected' || outcome === 'bounced';

/** Bounced and complained are final: no later report changes them. */
export const isFinalAfterDelivery = (outcome: RecipientOutcome | null): boolean => outcome === 'bounced' || outcome === 'complained';

export function countRefused(outcomes: Iterable<RecipientOutcome | null>): number {
  let refused = 0;
  for (const outcome of outcomes) if (isRefused(outcome)) refused += 1;
  return refused;
}
