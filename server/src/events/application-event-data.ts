/**
 * Which application event a status transition makes, and its `data` (docs/webhooks.md#events). Pure: the
 * one writer (`applyTransitions`, `insertMails`) gives it the transition, the mail as the same statement
 * left it and its envelope recipients, and appends what it returns in the same transaction.
 *
 * Decisions:
 * - A claim (Queued → Processing) and a worker's release at a graceful stop make no event: the mail is where
 *   the application already believes it is (queued, to be tried).
 * - The lease sweeper's return to Queued makes none either: the relay said nothing (the worker died), the
 *   mail is due again at once, and the application learns the outcome from the attempt that follows. A sweep
 *   that spends the retry budget (→ Error) is `mail.failed`.
 * - An unreachable relay with budget left is `mail.deferred` (`reason: 'unreachable'`), as a 4xx is
 *   (`reason: 'deferred'`): both say "not delivered yet, next try at …".
 * - A delete names the operator; retention's purge (no actor) makes no event: it is housekeeping of
 *   finished mails, and would flood receivers with thousands of events a night.
 */
import {
  STATUSES,
  type ApplicationEventType,
  type MailApplicationEventData,
  type MailEventRecipientOutcome,
  type MailEventType,
  type MailStatusCode,
} from '@outbox/contract';
import type { Transition } from '../mail/transition-types.js';

/** What the statement that moved the mail returned about it. */
export interface EventMail {
  id: number;
  messageId: string;
  subject: string;
  idempotencyKey: string | null;
  apiKeyId: number | null;
  /** The API key's name: the application. */
  application: string | null;
  /** `mails.event_seq` after the move: this event's place in the mail's history. */
  sequence: number;
  /** When the mail was accepted (`mails.received_at`): the statistics' latency of a `mail.sent`. */
  receivedAt: number;
}

/** An envelope recipient as stored in the transaction (after this attempt's outcomes). */
export interface EventRecipient {
  address: string;
  outcome: string | null;
  reply: string | null;
}

const TYPE_OF_MAIL_EVENT: Record<MailEventType, ApplicationEventType | null> = {
  accepted: 'mail.queued',
  dequeued: 'mail.dequeued',
  requeued: 'mail.requeued',
  sent: 'mail.sent',
  rejected: 'mail.failed',
  invalid: 'mail.failed',
  // Its mail.suppressed event (insertMails) tells the application; a creation makes no second one.
  suppressed: null,
  'deferred-retry': 'mail.deferred',
  'recipients-deferred': 'mail.deferred',
  'unreachable-retry': 'mail.deferred',
  'deferred-gave-up': 'mail.failed',
  'unreachable-gave-up': 'mail.failed',
  'lease-expired': null,
  'lease-expired-gave-up': 'mail.failed',
  released: null,
  // A report read by the bounce listener (bounces/bounce.service.ts): one event per report that changed a recipient.
  bounced: 'mail.bounced',
  complained: 'mail.complained',
  // A delayed report changes nothing the application must act on: the mail event alone.
  'bounce-delayed': null,
};

/** Why a mail failed, from the event that ended it. */
const FAILURE_REASON: Partial<Record<MailEventType, 'rejected' | 'invalid' | 'deferred' | 'unreachable' | 'lease-expired'>> = {
  rejected: 'rejected',
  invalid: 'invalid',
  'deferred-gave-up': 'deferred',
  'unreachable-gave-up': 'unreachable',
  'lease-expired-gave-up': 'lease-expired',
};

/** The application event a transition makes, or null (see the module comment). */
export function applicationEventTypeOf(t: Transition): ApplicationEventType | null {
  if (t.to === 'deleted') return t.actor === undefined ? null : 'mail.deleted';
  // An attempt that found every recipient it was for suppressed ends the mail (Error) without the relay: the
  // application hears it as mail.suppressed, as for a submission whose every recipient is suppressed.
  if (t.from !== null && t.event?.type === 'suppressed') return 'mail.suppressed';
  return t.event ? TYPE_OF_MAIL_EVENT[t.event.type] : null;
}

const iso = (ms: number) => new Date(ms).toISOString();
const statusNameOf = (code: number) => STATUSES[code]?.name ?? `status ${code}`;
/** `operator:alice` → `alice`. */
const operatorOf = (actor: string | undefined) => (actor?.startsWith('operator:') ? actor.slice('operator:'.length) : (actor ?? null));

/** Distinct envelope addresses with their outcome, in stored order. */
function outcomesOf(recipients: readonly EventRecipient[]): MailEventRecipientOutcome[] {
  const seen = new Set<string>();
  const out: MailEventRecipientOutcome[] = [];
  for (const r of recipients) {
    if (seen.has(r.address)) continue;
    seen.add(r.address);
    out.push({ address: r.address, outcome: r.outcome ?? 'pending', reply: r.reply });
  }
  return out;
}

/** The event's `data`; `type` must be `applicationEventTypeOf(t)`. */
export function applicationEventData(
  type: ApplicationEventType,
  t: Transition,
  from: MailStatusCode | null,
  mail: EventMail,
  recipients: readonly EventRecipient[],
): MailApplicationEventData {
  const outcomes = outcomesOf(recipients);
  const common = {
    mailId: mail.id,
    sequence: mail.sequence,
    messageId: mail.messageId,
    idempotencyKey: mail.idempotencyKey,
    subject: mail.subject,
    application: mail.application,
    recipients: outcomes.map((r) => r.address),
    status: t.to === 'deleted' ? null : statusNameOf(t.to),
  };
  if (t.to === 'deleted') return { ...common, operator: operatorOf(t.actor), previousStatus: from === null ? null : statusNameOf(from) };
  const detail = t.event?.detail ?? {};
  const attempt = typeof detail.attempt === 'number' ? detail.attempt : null;
  const reply = t.from !== null ? (t.set?.providerReply ?? (typeof detail.reply === 'string' ? detail.reply : null)) : null;
  switch (type) {
    case 'mail.queued':
      return { ...common, queuedAt: iso(t.at) };
    case 'mail.sent':
      return {
        ...common,
        attempt,
        reply,
        sentAt: iso(t.at),
        accepted: outcomes.filter((r) => r.outcome === 'accepted').map((r) => r.address),
        rejected: outcomes.filter((r) => r.outcome === 'rejected').map((r) => ({ address: r.address, reply: r.reply })),
        outcomes,
      };
    case 'mail.deferred':
      return {
        ...common,
        attempt,
        reply,
        reason: t.event?.type === 'unreachable-retry' ? 'unreachable' : 'deferred',
        nextAttemptAt: t.from !== null && t.set?.nextAttemptAt !== undefined ? iso(t.set.nextAttemptAt) : null,
        outcomes,
      };
    case 'mail.suppressed':
      return { ...common, suppressed: outcomes.filter((r) => r.outcome === 'suppressed').map((r) => r.address), outcomes };
    case 'mail.bounced':
    case 'mail.complained': {
      // The bounce service names the recipients its report moved (`marked`); their outcome and reply are stored by then.
      const marked = new Set(Array.isArray(detail.marked) ? detail.marked.filter((a): a is string => typeof a === 'string') : []);
      const reportId = typeof detail.reportId === 'number' ? detail.reportId : 0;
      const moved = outcomes.filter((r) => marked.has(r.address));
      if (type === 'mail.bounced')
        return { ...common, reportId, bounced: moved.map((r) => ({ address: r.address, reply: r.reply })), outcomes };
      const feedbackType = typeof detail.feedbackType === 'string' ? detail.feedbackType : null;
      return { ...common, reportId, complained: moved.map((r) => r.address), feedbackType, outcomes };
    }
    case 'mail.failed':
      return { ...common, attempt, reply, reason: (t.event && FAILURE_REASON[t.event.type]) ?? 'rejected', outcomes };
    default:
      // dequeued, requeued: operator actions.
      return { ...common, operator: operatorOf(t.event?.actor), previousStatus: from === null ? null : statusNameOf(from) };
  }
}
