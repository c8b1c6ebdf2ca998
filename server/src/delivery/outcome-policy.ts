/**
 * What one delivery attempt means for its mail (PRODUCT.md §1): the next status, the columns that change
 * and the event, as a transition for `applyTransitions`. Pure: the result, the mail as claimed and the
 * retry policy decide everything, so every branch is tested without a store or a relay.
 *
 * - sent → ProviderSent; rejected (5xx) → ProviderError; invalid → Error;
 * - deferred (4xx) or unreachable → Queued with backoff, or once the retry budget is spent ProviderError
 *   (a relay that kept deferring refused it in effect) or Error (one we never reached is our failure).
 */
import { MailStatus, type MailEventType } from '@outbox/contract';
import type { StatusTransition } from '../mail/transition.js';
import type { DeliveryOutcome } from './relay-transport.js';
import type { RetryPolicy, TransientOutcome } from './retry-policy.js';

/** The claimed mail, as the claim returned it. */
export interface AttemptedMail {
  id: number;
  /** Attempts so far, the one that just ended included (the claim counted it). */
  attempts: number;
  received_at: number;
  /** With the worker's id it names the claim: only that claim may record the outcome. */
  lease_expires_at: number | null;
}

export interface AttemptResult {
  mail: AttemptedMail;
  outcome: DeliveryOutcome;
  /** When the outcome arrived. */
  at: number;
}

const RETRY_EVENT = { deferred: 'deferred-retry', unreachable: 'unreachable-retry' } as const satisfies Record<
  TransientOutcome,
  MailEventType
>;
const GAVE_UP_EVENT = { deferred: 'deferred-gave-up', unreachable: 'unreachable-gave-up' } as const satisfies Record<
  TransientOutcome,
  MailEventType
>;

export function decideOutcome(result: AttemptResult, retryPolicy: RetryPolicy, workerId: string): StatusTransition {
  const { mail, outcome, at } = result;
  const detail: Record<string, unknown> = {
    attempt: mail.attempts,
    reply: outcome.reply,
    durationMs: Math.round(outcome.durationMs),
    worker: workerId,
  };
  const transition = (
    to: StatusTransition['to'],
    type: MailEventType,
    extra: { nextAttemptAt?: number; providerSentAt?: number } = {},
  ) => ({
    id: mail.id,
    from: [MailStatus.Processing],
    to,
    at,
    event: { type, actor: `worker:${workerId}`, detail },
    set: { providerReply: outcome.reply, lease: null, ...extra },
    // Only the claim that sent it may record it: a worker whose lease expired and was swept must not
    // overwrite what happened since.
    lease: { owner: workerId, expiresAt: mail.lease_expires_at },
  });

  switch (outcome.kind) {
    case 'sent':
      if (outcome.rejected.length > 0) detail.rejectedRecipients = outcome.rejected;
      return transition(MailStatus.ProviderSent, 'sent', { providerSentAt: at });
    case 'rejected':
      detail.code = outcome.code;
      return transition(MailStatus.ProviderError, 'rejected');
    case 'invalid':
      return transition(MailStatus.Error, 'invalid');
    case 'deferred':
    case 'unreachable': {
      if (outcome.kind === 'deferred') detail.code = outcome.code;
      const decision = retryPolicy.decide({ attempts: mail.attempts, receivedAt: mail.received_at, now: at, outcome: outcome.kind });
      if (decision.retry) {
        detail.nextAttemptAt = new Date(decision.nextAttemptAt).toISOString();
        return transition(MailStatus.Queued, RETRY_EVENT[outcome.kind], { nextAttemptAt: decision.nextAttemptAt });
      }
      return transition(outcome.kind === 'deferred' ? MailStatus.ProviderError : MailStatus.Error, GAVE_UP_EVENT[outcome.kind]);
    }
  }
}
