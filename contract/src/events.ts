/**
 * Every event type the server writes into a mail's history (`MailDetail.events[].type`), and nothing else:
 * a search for one of these strings finds every place that writes it. The history of a mail reads as
 * `accepted`, then zero or more delivery attempts, then where it ended.
 */
export const MAIL_EVENT_TYPES = [
  /** Stored Queued by a submission (HTTP or SMTP) or by the demo data. */
  'accepted',
  /** An operator took a Queued mail out of the queue. */
  'dequeued',
  /** An operator put a Dequeued, ProviderError or Error mail back in the queue with a fresh retry budget. */
  'requeued',
  /** The relay accepted the mail (some recipients may be listed as refused in the detail). */
  'sent',
  /** The relay refused the mail for good (5xx). */
  'rejected',
  /** The mail cannot be sent as stored (no content, no recipients). */
  'invalid',
  /** Stored Error at submission: every recipient is on the suppression list; the relay was not contacted. */
  'suppressed',
  /** The relay deferred it (4xx); back to Queued with backoff. */
  'deferred-retry',
  /**
   * Some recipients of the attempt were accepted or refused for good, others deferred (4xx at RCPT): back to
   * Queued with backoff, and the next attempt goes only to the deferred ones. `detail.recipients` has each
   * recipient's answer, `detail.pendingRecipients` who goes again.
   */
  'recipients-deferred',
  /** The relay could not be reached; back to Queued with backoff. */
  'unreachable-retry',
  /** Deferred with the retry budget spent: ProviderError. */
  'deferred-gave-up',
  /** Unreachable with the retry budget spent: Error. */
  'unreachable-gave-up',
  /** The worker holding the mail stopped answering; the sweeper returned it to Queued. */
  'lease-expired',
  /** As lease-expired, with the retry budget spent: Error. */
  'lease-expired-gave-up',
  /** A worker stopped while the send was in flight and gave the mail back to the queue. */
  'released',
  /**
   * A bounce report (RFC 3464) came back after the relay's 250 (docs/bounces.md): `detail.recipients` has each
   * recipient's Action, Status and Diagnostic-Code, `detail.reportId` the kept report. A hard bounce that leaves no
   * recipient accepted moves ProviderSent → ProviderError; otherwise the status stays.
   */
  'bounced',
  /** A delayed report (Action delayed, 4.x.x) came back: information only, the status stays. */
  'bounce-delayed',
  /** A recipient complained (an RFC 5965 feedback report): the status stays. */
  'complained',
] as const;

export type MailEventType = (typeof MAIL_EVENT_TYPES)[number];

export function isMailEventType(value: string): value is MailEventType {
  return (MAIL_EVENT_TYPES as readonly string[]).includes(value);
}
