/**
 * The moves of the mail lifecycle that start outside delivery: from which statuses each is allowed, where
 * it goes, what it changes and which event it writes. Pure (no SQL): `applyTransitions` applies them, and
 * a bulk action maps many ids through the same builders. The worker's moves are in
 * `delivery/outcome-policy.ts` and `delivery/lease-transitions.ts`.
 */
import { DELETABLE_STATUSES, MailStatus, REQUEUEABLE_STATUSES, type MailStatusCode } from '@outbox/contract';
import type { DeleteTransition, MailCreation, StatusTransition } from './transition-types.js';

/** A mail stored Queued by a submission (`insertMails`). */
export function acceptedCreation(at: number, actor: string): MailCreation {
  return { to: MailStatus.Queued, at, event: { type: 'accepted', actor } };
}

/** Stored Error at once: every envelope recipient is suppressed, so the relay is not contacted. */
export function suppressedCreation(at: number, actor: string, suppressed: readonly string[]): MailCreation {
  return {
    to: MailStatus.Error,
    at,
    event: { type: 'suppressed', actor, detail: { reason: 'Every recipient is on the suppression list', suppressed } },
  };
}

/** Queued → Dequeued, only if still Queued: exactly one of an operator and a worker's claim wins. */
export function dequeueTransition(id: number, at: number, actor: string): StatusTransition {
  return { id, from: [MailStatus.Queued], to: MailStatus.Dequeued, at, event: { type: 'dequeued', actor } };
}

/**
 * Dequeued | ProviderError | Error → Queued, due now, with a fresh retry budget; only while its content is kept
 * (content retention may have removed the message it would send).
 */
export function requeueTransition(id: number, at: number, actor: string): StatusTransition {
  return {
    id,
    from: REQUEUEABLE_STATUSES,
    to: MailStatus.Queued,
    at,
    event: { type: 'requeued', actor },
    set: { nextAttemptAt: at, attempts: 0, lease: null },
    withContent: true,
  };
}

/**
 * Deleted, only from a status that allows it (never Queued or Processing). `by`: the operator who deleted it
 * (a `mail.deleted` application event); left out by retention's purge.
 */
export function deleteTransition(
  id: number,
  from: readonly MailStatusCode[] = DELETABLE_STATUSES,
  by?: { at: number; actor: string },
): DeleteTransition {
  return by ? { id, from, to: 'deleted', at: by.at, actor: by.actor } : { id, from, to: 'deleted' };
}
