import { Type, type Static } from '@sinclair/typebox';

export const MAX_AUDIT_LIMIT = 500;

/** `GET /api/v1/audit`: newest first, keyset paged, filtered by operator, action and time. */
export const AuditQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_AUDIT_LIMIT, description: 'Entries per page (default 100)' })),
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'meta.nextCursor of the previous page' })),
    operator: Type.Optional(Type.String({ maxLength: 200, description: 'Only what this operator did (username)' })),
    action: Type.Optional(
      Type.String({ maxLength: 100, description: "An action, or a prefix of dotted actions: 'mail.bulk' matches 'mail.bulk.dequeue'" }),
    ),
    from: Type.Optional(Type.String({ format: 'date-time', description: 'At or after this instant (inclusive)' })),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'Before this instant (exclusive)' })),
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
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditEntry = Type.Object({
  id: Type.Integer(),
  at: Type.String({ format: 'date-time' }),
  actor: Type.String({ description: "Who: 'operator:<name>', 'cli', 'client:<address>' (a failed login), 'system'" }),
  action: Type.String({ description: "What: 'login', 'login.failed', 'logout', 'mail.dequeue', 'mail.bulk.requeue', 'apikey.create', …" }),
  target: Type.Union([Type.String(), Type.Null()], { description: "Which: 'mail:42', '120 mails', 'filter', a key or operator name" }),
  before: Type.Unknown({ description: 'State before, or the request: e.g. { ids } or { filter, expectedCount } of a bulk action' }),
  after: Type.Unknown({ description: 'State after, or the outcome: e.g. { done, skipped } of a bulk action' }),
});
export type AuditEntry = Static<typeof AuditEntry>;

export const AuditResponse = Type.Object({
  data: Type.Array(AuditEntry),
  meta: Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]) }),
});
export type AuditResponse = Static<typeof AuditResponse>;
