/**
 * The events Outbox tells applications about: written in the transaction of the change they
 * describe, delivered to webhook endpoints as Standard Webhooks (`{type, timestamp, data}`), each with a stable
 * id (`evt_…`, the `webhook-id`) and, for mail events, a per-mail sequence number. docs/webhooks.md describes
 * every type's `data`.
 */
export const APPLICATION_EVENT_TYPES = [
  'mail.queued',
  'mail.sent',
  'mail.deferred',
  'mail.failed',
  'mail.dequeued',
  'mail.requeued',
  'mail.deleted',
  'mail.bounced',
  'mail.complained',
  'mail.suppressed',
  'alert.firing',
  'alert.resolved',
] as const;

export type ApplicationEventType = (typeof APPLICATION_EVENT_TYPES)[number];

export function isApplicationEventType(value: string): value is ApplicationEventType {
  return (APPLICATION_EVENT_TYPES as readonly string[]).includes(value);
}

/** A recipient's outcome as events tell it (`pending` | `accepted` | `rejected` | `deferred`). */
export interface MailEventRecipientOutcome {
  address: string;
  outcome: string;
  /** The relay's last answer about this recipient; null before any. */
  reply: string | null;
}

/** The `data` of every `mail.*` event (docs/webhooks.md#events); the per-type fields follow. */
export interface MailEventCommonData {
  mailId: number;
  /** The event's place in the mail's history: 1 for `mail.queued`, then 2, 3, … with no gap. */
  sequence: number;
  messageId: string;
  idempotencyKey: string | null;
  subject: string;
  /** The API key's name (the application), or null for mails no application submitted. */
  application: string | null;
  /** Distinct envelope addresses (To, Cc, Bcc, or the SMTP envelope). */
  recipients: string[];
  /** The status name after the change (`Queued`, `ProviderSent`, …); null after a delete. */
  status: string | null;
}

export interface MailQueuedData extends MailEventCommonData {
  queuedAt: string;
}

export interface MailAttemptData extends MailEventCommonData {
  /** Which attempt this was (1, 2, …); null when unknown. */
  attempt: number | null;
  /** The relay's answer to the attempt (or why it could not be made). */
  reply: string | null;
  outcomes: MailEventRecipientOutcome[];
}

export interface MailSentData extends MailAttemptData {
  sentAt: string;
  accepted: string[];
  rejected: Array<{ address: string; reply: string | null }>;
}

export interface MailDeferredData extends MailAttemptData {
  reason: 'deferred' | 'unreachable';
  nextAttemptAt: string | null;
}

export interface MailFailedData extends MailAttemptData {
  reason: 'rejected' | 'invalid' | 'deferred' | 'unreachable' | 'lease-expired';
}

export interface MailOperatorActionData extends MailEventCommonData {
  /** The operator's name. */
  operator: string | null;
  previousStatus: string | null;
}

/** `mail.suppressed`: written with the submission; `status` is Error when no recipient was left to send to. */
export interface MailSuppressedData extends MailEventCommonData {
  suppressed: string[];
  outcomes: MailEventRecipientOutcome[];
}

/** `mail.bounced`: a hard-bounce report (RFC 3464) came back for recipients the relay had accepted. */
export interface MailBouncedData extends MailEventCommonData {
  /** The kept report (`GET /api/v1/bounces/{id}`). */
  reportId: number;
  /** The recipients this report bounced, with the reason their server gave (its Diagnostic-Code). */
  bounced: Array<{ address: string; reply: string | null }>;
  outcomes: MailEventRecipientOutcome[];
}

/** `mail.complained`: a feedback report (RFC 5965) came back: a recipient marked the mail as spam. */
export interface MailComplainedData extends MailEventCommonData {
  reportId: number;
  complained: string[];
  /** The report's Feedback-Type (`abuse`, `fraud`, …). */
  feedbackType: string | null;
  outcomes: MailEventRecipientOutcome[];
}

export type MailApplicationEventData =
  | MailQueuedData
  | MailSentData
  | MailDeferredData
  | MailFailedData
  | MailOperatorActionData
  | MailSuppressedData
  | MailBouncedData
  | MailComplainedData;
