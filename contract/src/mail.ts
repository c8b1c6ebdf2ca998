import { Type, type Static } from '@sinclair/typebox';
import { DataOf, Instant } from './common.js';
import { BounceReport } from './bounces.js';
import { LaneSchema } from './lanes.js';

export const Recipient = Type.Object({
  recipientName: Type.String(),
  recipientMail: Type.String(),
});
export type Recipient = Static<typeof Recipient>;

/** One row of the console's table (docs/console.md §3, docs/api.md#mail). */
export const Mail = Type.Object({
  id: Type.Integer(),
  fromName: Type.String(),
  fromMail: Type.String(),
  to: Type.Array(Recipient),
  subject: Type.String(),
  status: Type.Integer({ minimum: 0, maximum: 5 }),
  providerSentDate: Instant,
  receivedDate: Instant,
  lastUpdate: Instant,
  // Optional in the type only so that older clients' fixtures still compile: the server always sends both.
  recipientCount: Type.Optional(Type.Integer({ description: 'Distinct envelope recipients (who the mail is delivered to)' })),
  rejectedRecipients: Type.Optional(
    Type.Integer({ description: 'Recipients the relay refused for good (or, for a finished mail, gave up on)' }),
  ),
  // Optional in the type only for older clients' fixtures: the server always sends it.
  sendAt: Type.Optional(
    Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the submitter asked for it to be sent (a scheduled send); null: as soon as it can be',
    }),
  ),
  // Only in a submission's answer, when some recipient is on the suppression list (docs/api.md#suppressions-apiv1suppressions).
  suppressedRecipients: Type.Optional(
    Type.Array(Type.String(), { description: 'Envelope recipients on the suppression list: accepted, never sent to' }),
  ),
});
export type Mail = Static<typeof Mail>;

export const RECIPIENT_OUTCOMES = ['pending', 'accepted', 'rejected', 'deferred', 'bounced', 'complained', 'suppressed'] as const;
export type RecipientOutcome = (typeof RECIPIENT_OUTCOMES)[number];

/** One recipient of the detail with what the relay said about it (docs: per-recipient outcomes). */
export const RecipientDelivery = Type.Object({
  kind: Type.Unsafe<'to' | 'cc' | 'bcc' | 'envelope'>({ type: 'string', enum: ['to', 'cc', 'bcc', 'envelope'] }),
  recipientName: Type.String(),
  recipientMail: Type.String(),
  /** null: not an envelope address (a header-only name), or a mail finished before outcomes were kept per recipient. */
  outcome: Type.Union([Type.Unsafe<RecipientOutcome>({ type: 'string', enum: [...RECIPIENT_OUTCOMES] }), Type.Null()]),
  reply: Type.Union([Type.String(), Type.Null()]),
  updatedAt: Instant,
});
export type RecipientDelivery = Static<typeof RecipientDelivery>;

/** One attachment of the stored message, as parsed from its bytes (its content is in the raw .eml). */
export const MailAttachment = Type.Object({
  /** null when the part names no file. */
  filename: Type.Union([Type.String(), Type.Null()]),
  contentType: Type.String(),
  /** Decoded bytes (what the file holds), not the base64 size in the message. */
  size: Type.Integer(),
  /** `inline`: shown in the body (e.g. an image the HTML refers to by cid:), `attachment`: a file. */
  disposition: Type.Unsafe<'attachment' | 'inline'>({ type: 'string', enum: ['attachment', 'inline'] }),
});
export type MailAttachment = Static<typeof MailAttachment>;

/** `to` sorts by the first To recipient's address. */
export const MAIL_SORTS = ['receivedDate', 'lastUpdate', 'providerSentDate', 'subject', 'status', 'from', 'to'] as const;
export type MailSort = (typeof MAIL_SORTS)[number];
export const MAX_LIST_LIMIT = 500;
/** Trigram indexes index 3-character pieces: a shorter `q` cannot use them, and reads rows instead. */
export const MIN_INDEXED_SEARCH = 3;
/**
 * A list filtered by more than statuses (a search, a date range) counts its matches exactly up to this many;
 * beyond, `meta.total` is this and `meta.totalIsLowerBound` is true ("10,000+" would cost a read of 10,000 rows).
 */
export const LIST_COUNT_CAP = 1_000;

export const MailListQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ pattern: '^[0-5](,[0-5])*$', description: 'Status codes, comma separated, e.g. 0,4' })),
    q: Type.Optional(Type.String({ maxLength: 200, description: 'Search in sender, recipients and subject' })),
    receivedFrom: Type.Optional(
      Type.String({ format: 'date-time', description: 'Received at or after this instant (ISO 8601, inclusive)' }),
    ),
    receivedTo: Type.Optional(Type.String({ format: 'date-time', description: 'Received before this instant (ISO 8601, exclusive)' })),
    // Enums rather than unions of literals: a bad value gets one error that lists the allowed ones.
    sort: Type.Optional(Type.Unsafe<MailSort>({ type: 'string', enum: [...MAIL_SORTS] })),
    order: Type.Optional(Type.Unsafe<'asc' | 'desc'>({ type: 'string', enum: ['asc', 'desc'] })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIST_LIMIT })),
    cursor: Type.Optional(Type.String({ maxLength: 1000, description: 'meta.nextCursor or meta.prevCursor' })),
    application: Type.Optional(
      Type.String({
        pattern: '^(?:[1-9][0-9]{0,15}|none)$',
        description: "Operators: the mails of one application (an API key's id), or `none` for the mails no API key submitted",
      }),
    ),
    // Exact lookups: an application finds its mail by its own reference; operators may use them too.
    messageId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 998, description: 'The mail with this Message-ID header, angle brackets included' }),
    ),
    idempotencyKey: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'The mail submitted with this idempotency key' }),
    ),
  },
  { additionalProperties: false },
);
export type MailListQuery = Static<typeof MailListQuery>;

/** GET /api/v1/mail/{id}/remote-image: one image URL of the mail's HTML body, as written there (docs/api.md). */
export const RemoteImageQuery = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 8192, description: "An absolute http(s) URL that occurs in the mail's HTML body" }),
  },
  { additionalProperties: false },
);
export type RemoteImageQuery = Static<typeof RemoteImageQuery>;

export const MailListMeta = Type.Object({
  total: Type.Integer({ description: 'Mails matching the filter (all pages); with totalIsLowerBound, at least this many' }),
  totalIsLowerBound: Type.Boolean({ description: 'More mails match than LIST_COUNT_CAP (1,000): total is that cap' }),
  totalIsEstimate: Type.Boolean({ description: 'Always false: totals are exact or a lower bound (kept for older clients)' }),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
  prevCursor: Type.Union([Type.String(), Type.Null()]),
  lastCursor: Type.Optional(
    Type.Union([Type.String(), Type.Null()], {
      description: 'The last page (keyset from the far end, no OFFSET); null when this page is the last',
    }),
  ),
  counts: Type.Record(Type.String(), Type.Integer(), {
    description: 'Mails per status code over the whole store, exact',
  }),
});
export type MailListMeta = Static<typeof MailListMeta>;

export const MailListResponse = Type.Object({ data: Type.Array(Mail), meta: MailListMeta });
export type MailListResponse = Static<typeof MailListResponse>;

export const MailResponse = DataOf(Mail);
export type MailResponse = Static<typeof MailResponse>;

export const DeleteMailResponse = DataOf(Type.Object({ id: Type.Integer() }));
export type DeleteMailResponse = Static<typeof DeleteMailResponse>;

export const MailEvent = Type.Object({
  at: Type.String({ format: 'date-time' }),
  actor: Type.String(),
  type: Type.String(),
  fromStatus: Type.Union([Type.Integer(), Type.Null()]),
  toStatus: Type.Union([Type.Integer(), Type.Null()]),
  detail: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
});
export type MailEvent = Static<typeof MailEvent>;

/** Everything about one mail (`GET /api/v1/mail/{id}`): the row, its message and its history. */
export const MailDetail = Type.Composite([
  Mail,
  Type.Object({
    messageId: Type.String(),
    cc: Type.Array(Recipient),
    bcc: Type.Array(Recipient),
    envelopeFrom: Type.Union([Type.String(), Type.Null()]),
    envelopeTo: Type.Array(Type.String()),
    attempts: Type.Integer(),
    nextAttemptAt: Instant,
    providerReply: Type.Union([Type.String(), Type.Null()]),
    leaseOwner: Type.Union([Type.String(), Type.Null()]),
    leaseExpiresAt: Instant,
    /** The lane it was accepted into (docs/lanes.md); optional in the type for older fixtures. */
    lane: Type.Optional(LaneSchema),
    sizeBytes: Type.Union([Type.Integer(), Type.Null()]),
    headers: Type.Array(Type.Object({ name: Type.String(), value: Type.String() })),
    text: Type.Union([Type.String(), Type.Null()]),
    html: Type.Union([Type.String(), Type.Null()]),
    events: Type.Array(MailEvent),
    /** Every To, Cc, Bcc and envelope recipient with its delivery outcome; optional in the type for older fixtures. */
    recipients: Type.Optional(Type.Array(RecipientDelivery)),
    /** The message's attachments (none for demo mails, which have no stored message); optional in the type for older fixtures. */
    attachments: Type.Optional(Type.Array(MailAttachment)),
    /**
     * When content retention removed the raw message, bodies and attachments (docs/operations.md#content-retention);
     * null while they are kept. Optional in the type for older fixtures; the server always sends it.
     */
    contentRemovedAt: Type.Optional(
      Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description:
          'When content retention removed the raw message, bodies and attachments (then null, empty and absent); null while kept',
      }),
    ),
    /** Bounce and complaint reports matched to this mail, oldest first (docs/bounces.md); the raw bytes via /api/v1/bounces/{id}/raw. */
    bounces: Type.Optional(Type.Array(BounceReport)),
  }),
]);
export type MailDetail = Static<typeof MailDetail>;

/** The events and reports the detail carries at most; the rest are read with the paged routes below. */
export const MAIL_DETAIL_EVENTS = 200;
export const MAIL_DETAIL_BOUNCES = 50;

export const MailDetailResponse = Type.Object({
  data: Type.Array(MailDetail),
  meta: Type.Optional(
    Type.Object({
      eventsNextCursor: Type.Union([Type.String(), Type.Null()], {
        description: 'More events than the detail carries: the cursor of GET /api/v1/mail/{id}/events for the next ones',
      }),
      bouncesNextCursor: Type.Union([Type.String(), Type.Null()], {
        description: 'More reports than the detail carries: the cursor of GET /api/v1/mail/{id}/bounces for the next ones',
      }),
    }),
  ),
});
export type MailDetailResponse = Static<typeof MailDetailResponse>;

export const MAX_MAIL_EVENTS_LIMIT = 500;

/** `GET /api/v1/mail/{id}/events` and `…/bounces`: one page, oldest first, keyset paged. */
export const MailPageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_MAIL_EVENTS_LIMIT, description: 'Items per page (default 100)' })),
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'meta.nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type MailPageQuery = Static<typeof MailPageQuery>;

export const MailEventsResponse = Type.Object({
  data: Type.Array(MailEvent),
  meta: Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]) }),
});
export type MailEventsResponse = Static<typeof MailEventsResponse>;
