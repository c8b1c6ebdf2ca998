import { Type, type Static } from '@sinclair/typebox';
import { LaneSchema } from './lanes.js';

export const SubmitRecipient = Type.Object(
  {
    recipientName: Type.Optional(Type.String({ maxLength: 200 })),
    recipientMail: Type.String({ maxLength: 254 }),
  },
  { additionalProperties: false },
);

/**
 * One limit for a mail's recipients, however they are given: to, cc and bcc together over HTTP, RCPT TO
 * over SMTP (452 past it). It was 100 per list over HTTP and unlimited over SMTP.
 */
export const MAX_RECIPIENTS_PER_MAIL = 300;
export const MAX_BATCH = 500;
/** A scheduled send (`sendAt`, the SMTP header X-Outbox-Send-At) may lie at most this many days ahead. */
export const MAX_SCHEDULE_DAYS = 30;
/** The SMTP form of `sendAt` (docs/api.md#scheduled-sends): read at acceptance and removed from the message. */
export const SEND_AT_HEADER = 'X-Outbox-Send-At';

/** `POST /api/v1/mail` (docs/api.md#submission-post-apiv1mail), authorised with an API key. */
export const SubmitMailRequest = Type.Object(
  {
    fromName: Type.Optional(Type.String({ maxLength: 200 })),
    fromMail: Type.String({ maxLength: 254 }),
    to: Type.Array(SubmitRecipient, { minItems: 1, maxItems: MAX_RECIPIENTS_PER_MAIL }),
    cc: Type.Optional(Type.Array(SubmitRecipient, { maxItems: MAX_RECIPIENTS_PER_MAIL })),
    bcc: Type.Optional(Type.Array(SubmitRecipient, { maxItems: MAX_RECIPIENTS_PER_MAIL })),
    subject: Type.String({ maxLength: 998 }),
    text: Type.Optional(Type.String()),
    html: Type.Optional(Type.String()),
    headers: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 998 }))),
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    /**
     * Relay with the null sender `MAIL FROM:<>` (RFC 5321 §4.5.5) instead of fromMail, for auto-replies
     * and bounces (RFC 3834) that must never be answered; the From header still shows fromMail.
     */
    nullSender: Type.Optional(Type.Boolean()),
    /**
     * Send at this instant, not before (ISO 8601 with a time zone, e.g. 2026-12-24T08:00:00Z), at most
     * MAX_SCHEDULE_DAYS ahead; an instant already past sends at once. The mail waits Queued; Dequeue cancels it.
     */
    sendAt: Type.Optional(Type.String({ maxLength: 64 })),
    /** The mail's lane (docs/lanes.md); by default its application's. */
    lane: Type.Optional(LaneSchema),
  },
  { additionalProperties: false },
);
export type SubmitMailRequest = Static<typeof SubmitMailRequest>;

/**
 * What the 202 says of each mail when the submitter asks for the short answer (`Prefer: return=minimal`,
 * RFC 7240; docs/api.md#submission-post-apiv1mail): its id and status, and the suppressed recipients when
 * there are any. The full Mail is the default answer.
 */
export const AcceptedMail = Type.Object({
  id: Type.Integer(),
  status: Type.Integer({ minimum: 0, maximum: 5 }),
  suppressedRecipients: Type.Optional(Type.Array(Type.String())),
});
export type AcceptedMail = Static<typeof AcceptedMail>;

export const SubmitMailBatchRequest = Type.Array(SubmitMailRequest, { minItems: 1, maxItems: MAX_BATCH });
export type SubmitMailBatchRequest = Static<typeof SubmitMailBatchRequest>;
