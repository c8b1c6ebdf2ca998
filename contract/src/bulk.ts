import { Type, type Static } from '@sinclair/typebox';

/** The operator's actions a bulk request may take; each is the one-mail action applied to many. */
export const BULK_ACTIONS = ['dequeue', 'delete', 'requeue'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** Ids per request in the ids form. */
export const MAX_BULK_IDS = 1000;

/**
 * Ids listed per skip reason in the answer; `count` is always exact. A filter action may skip thousands,
 * and the answer is read by a person (the console shows the counts, and a few ids to open).
 */
export const MAX_SKIPPED_IDS_LISTED = 100;

/** The list's filter (`GET /api/v1/mail/list`), with the same meaning for each field. */
export const BulkFilter = Type.Object(
  {
    status: Type.Optional(Type.String({ pattern: '^[0-5](,[0-5])*$', description: 'Status codes, comma separated, e.g. 4,5' })),
    q: Type.Optional(Type.String({ maxLength: 200, description: 'Search in sender, recipients and subject, as the list does' })),
    receivedFrom: Type.Optional(Type.String({ format: 'date-time', description: 'Received at or after this instant (inclusive)' })),
    receivedTo: Type.Optional(Type.String({ format: 'date-time', description: 'Received before this instant (exclusive)' })),
  },
  { additionalProperties: false },
);
export type BulkFilter = Static<typeof BulkFilter>;

/**
 * Either `ids` (1 to 1,000 distinct mail ids) or `filter` with `expectedCount` (how many mails the operator
 * saw matching). One object rather than a union: a union's validation errors name no single field.
 */
export const BulkRequest = Type.Object(
  {
    action: Type.Unsafe<BulkAction>({ type: 'string', enum: [...BULK_ACTIONS] }),
    ids: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), {
        minItems: 1,
        maxItems: MAX_BULK_IDS,
        uniqueItems: true,
        description: 'The mails to act on (1 to 1,000, distinct); not with filter',
      }),
    ),
    filter: Type.Optional(BulkFilter),
    dryRun: Type.Optional(
      Type.Boolean({
        description:
          'true: move nothing and write no audit entry; answer what would move (done, and moving per status) and what would be skipped',
      }),
    ),
    expectedCount: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'With filter: mails the operator saw matching; far more now answers 409 count_changed',
      }),
    ),
  },
  { additionalProperties: false },
);
export type BulkRequest = Static<typeof BulkRequest>;

export const BulkSkipped = Type.Object({
  reason: Type.String({
    description:
      "Why these mails did not move: their status at the time ('queued', 'processing', 'dequeued', 'provider_sent', 'provider_error', 'error'), 'not_found', or 'content_removed' (a requeue of a mail whose content retention removed its message)",
  }),
  count: Type.Integer(),
  ids: Type.Array(Type.Integer(), { description: 'The first 100 of them' }),
});
export type BulkSkipped = Static<typeof BulkSkipped>;

/** With dryRun: how many mails of one status would move. */
export const BulkMoving = Type.Object({
  reason: Type.String({ description: "The status they are in now, named like a skip reason ('queued', 'provider_error', …)" }),
  count: Type.Integer(),
});
export type BulkMoving = Static<typeof BulkMoving>;

export const BulkResult = Type.Object({
  action: Type.Unsafe<BulkAction>({ type: 'string', enum: [...BULK_ACTIONS] }),
  done: Type.Integer({ description: 'Mails that moved (with dryRun: that would move now)' }),
  skipped: Type.Array(BulkSkipped),
  dryRun: Type.Optional(Type.Boolean({ description: 'true when nothing was moved (the request asked for a dry run)' })),
  moving: Type.Optional(Type.Array(BulkMoving, { description: 'With dryRun: the mails that would move, counted per status' })),
});
export type BulkResult = Static<typeof BulkResult>;

export const BulkResponse = Type.Object({ data: Type.Array(BulkResult) });
export type BulkResponse = Static<typeof BulkResponse>;
