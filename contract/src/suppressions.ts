import { Type, type Static } from '@sinclair/typebox';

export const MAX_SUPPRESSION_LIMIT = 500;
export const SUPPRESSION_REASONS = ['hard_bounce', 'rcpt_refused', 'complaint', 'manual'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** `GET /api/v1/suppressions`: newest first, keyset paged, `q` an address substring. */
export const SuppressionQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_SUPPRESSION_LIMIT, description: 'Entries per page (default 100)' })),
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'meta.nextCursor of the previous page' })),
    q: Type.Optional(Type.String({ maxLength: 254, description: 'Only addresses containing this text (case-insensitive)' })),
    format: Type.Optional(
      Type.Unsafe<'json' | 'csv'>({
        type: 'string',
        enum: ['json', 'csv'],
        description: 'csv: every matching entry as CSV (also Accept: text/csv)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SuppressionQuery = Static<typeof SuppressionQuery>;

export const Suppression = Type.Object({
  address: Type.String({ description: 'Lower-cased' }),
  reason: Type.Unsafe<SuppressionReason>({ type: 'string', enum: [...SUPPRESSION_REASONS] }),
  mailId: Type.Union([Type.Integer(), Type.Null()], { description: 'The mail that caused it (null when added by hand)' }),
  detail: Type.Union([Type.String(), Type.Null()], { description: "The relay's reply or the report's diagnostic" }),
  note: Type.Union([Type.String(), Type.Null()]),
  createdBy: Type.String({ description: "'operator:<name>', 'cli', 'worker:<id>', 'bounce' (the bounce listener)" }),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null: until removed' }),
});
export type Suppression = Static<typeof Suppression>;

export const SuppressionListResponse = Type.Object({
  data: Type.Array(Suppression),
  meta: Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]) }),
});
export type SuppressionListResponse = Static<typeof SuppressionListResponse>;

/** `POST /api/v1/suppressions`: adds the address by hand, or refreshes it (reason `manual`). */
export const AddSuppressionRequest = Type.Object(
  {
    address: Type.String({ maxLength: 254 }),
    note: Type.Optional(Type.String({ maxLength: 1000 })),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'Suppressed until then; left out: until removed' })),
  },
  { additionalProperties: false },
);
export type AddSuppressionRequest = Static<typeof AddSuppressionRequest>;

export const SuppressionAddress = Type.Object({ address: Type.String({ maxLength: 254 }) }, { additionalProperties: false });

/** `POST /api/v1/suppressions/import` (text/csv `address,note,expiresAt`): what was done with each line. */
export const SuppressionImportResponse = Type.Object({
  added: Type.Integer(),
  updated: Type.Integer(),
  refused: Type.Array(Type.Object({ line: Type.Integer(), address: Type.String(), reason: Type.String() })),
});
export type SuppressionImportResponse = Static<typeof SuppressionImportResponse>;
