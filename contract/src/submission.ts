import { Type, type Static } from '@sinclair/typebox';

export const SubmitRecipient = Type.Object(
  {
    recipientName: Type.Optional(Type.String({ maxLength: 200 })),
    recipientMail: Type.String({ maxLength: 254 }),
  },
  { additionalProperties: false },
);

export const MAX_RECIPIENTS = 100;
export const MAX_BATCH = 500;

/** `POST /api/v1/mail` (PRODUCT.md §2), authorised with an API key. */
export const SubmitMailRequest = Type.Object(
  {
    fromName: Type.Optional(Type.String({ maxLength: 200 })),
    fromMail: Type.String({ maxLength: 254 }),
    to: Type.Array(SubmitRecipient, { minItems: 1, maxItems: MAX_RECIPIENTS }),
    cc: Type.Optional(Type.Array(SubmitRecipient, { maxItems: MAX_RECIPIENTS })),
    bcc: Type.Optional(Type.Array(SubmitRecipient, { maxItems: MAX_RECIPIENTS })),
    subject: Type.String({ maxLength: 998 }),
    text: Type.Optional(Type.String()),
    html: Type.Optional(Type.String()),
    headers: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 998 }))),
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type SubmitMailRequest = Static<typeof SubmitMailRequest>;

export const SubmitMailBatchRequest = Type.Array(SubmitMailRequest, { minItems: 1, maxItems: MAX_BATCH });
export type SubmitMailBatchRequest = Static<typeof SubmitMailBatchRequest>;
