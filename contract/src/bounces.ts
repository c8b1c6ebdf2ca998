import { Type, type Static } from '@sinclair/typebox';

export const MAX_BOUNCE_LIMIT = 500;

/** `GET /api/v1/bounces`: the reports the bounce listener kept, newest first, keyset paged (docs/bounces.md). */
export const BouncesQuery = Type.Object(
  {
    matched: Type.Optional(
      Type.Unsafe<'true' | 'false'>({
        type: 'string',
        enum: ['true', 'false'],
        description: 'true: only reports matched to a mail; false: only the unmatched ones, which wait for an operator',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BOUNCE_LIMIT, description: 'Reports per page (default 100)' })),
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'meta.nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type BouncesQuery = Static<typeof BouncesQuery>;

/** One recipient block of an RFC 3464 report. */
export const BounceRecipient = Type.Object({
  recipient: Type.String({ description: 'Final-Recipient (else Original-Recipient), lower-cased' }),
  action: Type.String({ description: 'failed, delayed, delivered, relayed or expanded' }),
  status: Type.String({ description: 'The enhanced status code, e.g. 5.1.1' }),
  diagnostic: Type.Union([Type.String(), Type.Null()], { description: 'Diagnostic-Code: the remote reply' }),
});
export type BounceRecipient = Static<typeof BounceRecipient>;

/** What Outbox read in a report and did with it: the `summary` of a kept report. */
export const BounceSummary = Type.Object({
  subject: Type.Union([Type.String(), Type.Null()]),
  recipients: Type.Array(BounceRecipient, { description: 'DSN: per recipient' }),
  feedback: Type.Union(
    [
      Type.Object({
        type: Type.String({ description: 'Feedback-Type: abuse, fraud, …' }),
        recipients: Type.Array(Type.String(), { description: 'Original-Rcpt-To, else the returned To' }),
        userAgent: Type.Union([Type.String(), Type.Null()]),
      }),
      Type.Null(),
    ],
    { description: 'ARF (RFC 5965): the complaint' },
  ),
  originalMessageId: Type.Union([Type.String(), Type.Null()], { description: "The returned headers' Message-ID" }),
  problem: Type.Union([Type.String(), Type.Null()], { description: 'Why a report of kind unknown could not be read' }),
  applied: Type.Array(
    Type.Object({
      recipient: Type.String(),
      outcome: Type.Unsafe<'bounced' | 'delayed' | 'complained' | 'soft' | 'unknown_recipient' | 'unchanged'>({
        type: 'string',
        enum: ['bounced', 'delayed', 'complained', 'soft', 'unknown_recipient', 'unchanged'],
        description: 'unchanged: the recipient was bounced or complained already',
      }),
    }),
    { description: 'What the report changed on its mail, per recipient' },
  ),
  rawSize: Type.Optional(Type.Integer({ description: 'Bytes received, when more than the 64 KiB kept (then `size` is what was kept)' })),
});
export type BounceSummary = Static<typeof BounceSummary>;

export const BounceReport = Type.Object({
  id: Type.Integer(),
  receivedAt: Type.String({ format: 'date-time' }),
  envelopeFrom: Type.String({ description: 'MAIL FROM of the report (usually empty: <>)' }),
  envelopeTo: Type.String({ description: 'RCPT TO: the return path it came back to' }),
  kind: Type.Unsafe<'dsn' | 'arf' | 'unknown'>({ type: 'string', enum: ['dsn', 'arf', 'unknown'] }),
  mailId: Type.Union([Type.Integer(), Type.Null()], { description: 'The mail it was matched to; null: unmatched' }),
  matchedBy: Type.Union([Type.Unsafe<'return-path' | 'message-id'>({ type: 'string', enum: ['return-path', 'message-id'] }), Type.Null()]),
  size: Type.Integer({ description: 'Bytes of the raw report (GET /api/v1/bounces/{id}/raw)' }),
  summary: BounceSummary,
});
export type BounceReport = Static<typeof BounceReport>;

export const BouncesResponse = Type.Object({
  data: Type.Array(BounceReport),
  meta: Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]) }),
});
export type BouncesResponse = Static<typeof BouncesResponse>;

export const BounceResponse = Type.Object({ data: Type.Array(BounceReport) });
export type BounceResponse = Static<typeof BounceResponse>;

export const BounceIdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The report id' }),
});
export type BounceIdParams = Static<typeof BounceIdParams>;
