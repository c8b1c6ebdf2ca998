/**
 * What one delivery attempt means for its mail and its recipients (docs/lifecycle.md, docs/lifecycle.md):
 * the next status, the columns that change, the event (a transition for `applyTransitions`) and each
 * recipient's new outcome. Pure: the result, the mail as claimed, its recipients' outcomes before the attempt
 * and the retry policy decide everything, so every branch is tested without a store or a relay.
 *
 * Per recipient: accepted (2xx after DATA), rejected (5xx at RCPT, or the whole mail refused), deferred (4xx:
 * tried again on the mail's backoff, alone). The mail is finished when no recipient is pending or deferred:
 * - ProviderSent when at least one recipient was accepted (in this attempt or an earlier one);
 * - ProviderError when none was (every one refused for good, or still deferred when the budget ran out);
 * - Error when the message cannot be sent (invalid), or the relay was unreachable on the attempt that spent
 *   the budget and nobody was accepted before.
 * A budget that runs out with recipients still pending or deferred turns them into rejected, with the last
 * reply, so a finished mail never has an open recipient.
 */
import { MailStatus, type MailEventType } from '@outbox/contract';
import { countRefused, isDelivered, isOpen } from '../mail/recipient-outcomes.js';
import type { StatusTransition } from '../mail/transition-types.js';
import type { RecipientOutcome } from '../store/schema.js';
import type { DeliveryOutcome, RecipientResult } from './relay-transport.js';
import { retryAgeFrom, type RetryPolicy, type TransientOutcome } from './retry-policy.js';

/** The claimed mail, as the claim returned it. */
export interface AttemptedMail {
  id: number;
  /** Attempts so far, the one that just ended included (the claim counted it). */
  attempts: number;
  received_at: number;
  /** A scheduled send's instant (migration 026): the retry budget's age counts from it, not from the receipt. */
  send_at?: number | null | undefined;
  /** With the worker's id it names the claim: only that claim may record the outcome. */
  lease_expires_at: number | null;
}

/** An envelope recipient as stored before the attempt; null outcome: recorded before per-recipient outcomes. */
export interface RecipientState {
  address: string;
  outcome: RecipientOutcome | null;
}

export interface AttemptResult {
  mail: AttemptedMail;
  outcome: DeliveryOutcome;
  /** When the outcome arrived. */
  at: number;
  /**
   * Every envelope recipient (distinct) with its outcome before this attempt, and which of them the attempt
   * was sent to. Left out (tests of the mail-level rules): the mail counts as one recipient.
   */
  recipients?: { all: RecipientState[]; targets: string[] } | undefined;
  /**
   * Which named relay took the attempt and those it failed over from (relay-router.ts; only when routes exist), and how
   * many throttling replies it was sent again after, within this attempt.
   */
  relay?: { relay?: string; passedOver?: Array<{ relay: string; reply: string }>; throttled?: number } | undefined;
}

/** A recipient whose outcome this attempt changes (an UPDATE of its envelope rows). */
export interface RecipientUpdate {
  mailId: number;
  address: string;
  outcome: RecipientOutcome;
  reply: string;
}

export interface AttemptDecision {
  transition: StatusTransition;
  recipients: RecipientUpdate[];
}

const RETRY_EVENT = { deferred: 'deferred-retry', unreachable: 'unreachable-retry' } as const satisfies Record<
  TransientOutcome,
  MailEventType
>;
const GAVE_UP_EVENT = { deferred: 'deferred-gave-up', unreachable: 'unreachable-gave-up' } as const satisfies Record<
  TransientOutcome,
  MailEventType
>;

/** What the relay said about each target of the attempt; undefined: no answer about it (unreachable). */
function answersOf(outcome: DeliveryOutcome, targets: string[]): Map<string, RecipientResult> {
  const answers = new Map<string, RecipientResult>();
  const listed = new Map<string, RecipientResult>();
  if ('recipients' in outcome) for (const r of outcome.recipients ?? []) listed.set(r.address.toLowerCase(), r);
  for (const address of targets) {
    const said = listed.get(address.toLowerCase());
    if (said) answers.set(address, { ...said, address });
    else if (outcome.kind === 'sent') {
      // Not named among the refusals of a sent mail: DATA was accepted for it.
      const refused = outcome.rejected.some((r) => r.toLowerCase() === address.toLowerCase());
      answers.set(address, { address, outcome: refused ? 'rejected' : 'accepted', reply: outcome.reply });
    } else if (outcome.kind === 'rejected' || outcome.kind === 'invalid')
      answers.set(address, { address, outcome: 'rejected', reply: outcome.reply });
    else if (outcome.kind === 'deferred') answers.set(address, { address, outcome: 'deferred', reply: outcome.reply });
  }
  return answers;
}

export function decideAttempt(result: AttemptResult, retryPolicy: RetryPolicy, workerId: string): AttemptDecision {
  const { mail, outcome, at } = result;
  // Without recipient states the mail is one recipient (''), never written back.
  const { all, targets } = result.recipients ?? { all: [{ address: '', outcome: 'pending' as const }], targets: [''] };
  const answers = answersOf(outcome, targets);
  const states = new Map<string, RecipientOutcome | null>(all.map((r) => [r.address, r.outcome]));
  const replies = new Map<string, string>();
  for (const answer of answers.values()) {
    states.set(answer.address, answer.outcome);
    replies.set(answer.address, answer.reply);
  }

  const detail: Record<string, unknown> = {
    attempt: mail.attempts,
    reply: outcome.reply,
    durationMs: Math.round(outcome.durationMs),
    worker: workerId,
  };
  if (outcome.kind === 'sent' && outcome.rejected.length > 0) detail.rejectedRecipients = outcome.rejected;
  if (outcome.kind === 'rejected' || outcome.kind === 'deferred') detail.code = outcome.code;
  if (result.recipients) detail.recipients = [...answers.values()];
  if (result.relay) {
    if (result.relay.relay !== undefined) detail.relay = result.relay.relay;
    if (result.relay.passedOver) detail.passedOver = result.relay.passedOver;
    if (result.relay.throttled) detail.throttled = result.relay.throttled;
  }

  let to: StatusTransition['to'];
  let type: MailEventType;
  let nextAttemptAt: number | undefined;
  const open = [...states].filter(([, state]) => isOpen(state)).map(([address]) => address);
  const thisAttemptFinishedSome = [...answers.values()].some((a) => a.outcome !== 'deferred');
  if (outcome.kind === 'invalid') {
    to = MailStatus.Error;
    type = 'invalid';
  } else if (open.length > 0) {
    const transient: TransientOutcome = outcome.kind === 'unreachable' ? 'unreachable' : 'deferred';
    const decision = retryPolicy.decide({ attempts: mail.attempts, receivedAt: retryAgeFrom(mail), now: at, outcome: transient });
    if (decision.retry) {
      to = MailStatus.Queued;
      nextAttemptAt = decision.nextAttemptAt;
      // Some recipients of this attempt were accepted or refused for good, the rest go again alone.
      type = transient === 'deferred' && thisAttemptFinishedSome ? 'recipients-deferred' : RETRY_EVENT[transient];
      detail.nextAttemptAt = new Date(decision.nextAttemptAt).toISOString();
      if (result.recipients) detail.pendingRecipients = open;
    } else {
      type = GAVE_UP_EVENT[transient];
      to = transient === 'unreachable' ? MailStatus.Error : MailStatus.ProviderError;
      if (result.recipients) detail.gaveUpRecipients = open;
    }
  } else {
    to = MailStatus.ProviderError;
    type = 'rejected';
  }
  // Every recipient this attempt was for is suppressed (listed after acceptance): not sent, as a submission whose
  // every recipient is suppressed (mail/lifecycle.ts), unless one was accepted before (below).
  if (outcome.kind === 'rejected' && answers.size > 0 && [...answers.values()].every((a) => a.outcome === 'suppressed')) {
    to = MailStatus.Error;
    type = 'suppressed';
  }
  // Finished: nobody stays open, and one accepted recipient (now or before) makes the mail ProviderSent.
  if (to !== MailStatus.Queued) {
    for (const address of open) {
      states.set(address, 'rejected');
      // Its own last answer when it had one (a 4xx at RCPT), else the mail's (an unreachable relay).
      replies.set(address, `Gave up after ${mail.attempts} attempts: ${replies.get(address) ?? outcome.reply}`);
    }
    if (outcome.kind !== 'invalid' && [...states.values()].some(isDelivered)) {
      to = MailStatus.ProviderSent;
      type = 'sent';
    }
  }

  const rejected = countRefused(states.values());
  const transition: StatusTransition = {
    id: mail.id,
    from: [MailStatus.Processing],
    to,
    at,
    event: { type, actor: `worker:${workerId}`, detail },
    set: {
      providerReply: outcome.reply,
      lease: null,
      ...(nextAttemptAt !== undefined ? { nextAttemptAt } : {}),
      ...(to === MailStatus.ProviderSent ? { providerSentAt: at } : {}),
      ...(result.recipients ? { rejectedRecipients: rejected } : {}),
    },
    // Only the claim that sent it may record it: a worker whose lease expired and was swept must not
    // overwrite what happened since.
    lease: { owner: workerId, expiresAt: mail.lease_expires_at },
  };
  const updates: RecipientUpdate[] = [];
  if (result.recipients) {
    for (const [address, reply] of replies) {
      updates.push({ mailId: mail.id, address, outcome: states.get(address) ?? 'pending', reply });
    }
  }
  return { transition, recipients: updates };
}

/** The mail-level transition alone (the tests of the status rules, and callers without recipient states). */
export function decideOutcome(result: AttemptResult, retryPolicy: RetryPolicy, workerId: string): StatusTransition {
  return decideAttempt(result, retryPolicy, workerId).transition;
}
