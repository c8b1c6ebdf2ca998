/**
 * Applications (docs/api.md#managing-applications-apiv1applications): an API key is an
 * application. Operators create, rename, revoke and rotate them; a key is shown once, when made.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Instant } from './common.js';
import { LaneSchema } from './lanes.js';

/** Letters, digits and `. _ @ -`, as the command line has always taken them. */
export const APPLICATION_NAME_PATTERN = /^[A-Za-z0-9._@-]{1,64}$/;
export const MAX_APPLICATION_NAME_LENGTH = 64;
/** A rotation's old key keeps working at most this long ("a grace period of at most 24 h", docs/api.md#managing-applications-apiv1applications). */
export const MAX_ROTATION_GRACE_SECONDS = 86_400;
export const DEFAULT_ROTATION_GRACE_SECONDS = 3_600;
/** `mailsLast24h` is counted exactly up to this, then answered as a lower bound (as the list's totals do, docs/api.md). */
export const APPLICATION_MAIL_COUNT_CAP = 10_000;

export const Application = Type.Object({
  id: Type.Integer(),
  name: Type.String({ description: 'Unique among applications, revoked ones included' }),
  createdAt: Type.String({ format: 'date-time' }),
  createdBy: Type.Union([Type.String(), Type.Null()], {
    description: "Who made it: 'operator:NAME', 'cli'; null for keys made before applications were managed",
  }),
  /** When a request last authenticated with it; written at most once a minute. */
  lastUsedAt: Instant,
  revokedAt: Instant,
  /** Until when the key replaced by the last rotation still works (null: no rotation in its grace period). */
  previousKeyExpiresAt: Instant,
  mailsLast24h: Type.Integer({ description: `Mails it submitted in the last 24 hours, counted up to ${APPLICATION_MAIL_COUNT_CAP}` }),
  mailsLast24hIsLowerBound: Type.Boolean({ description: 'true when the count stopped at the cap: "10,000+"' }),
  /** Its mails' lane unless a mail names its own (docs/lanes.md). */
  lane: LaneSchema,
  /** Days its final mails keep their content (0: removed once final); null follows CONTENT_RETENTION_DAYS. */
  contentRetentionDays: Type.Union([Type.Integer(), Type.Null()]),
});
export type Application = Static<typeof Application>;

/** An application as answered by create and rotate: the only time its key (`obx_…`) is shown. */
export const ApplicationWithKey = Type.Intersect([Application, Type.Object({ key: Type.String() })]);
export type ApplicationWithKey = Static<typeof ApplicationWithKey>;

const ApplicationName = Type.String({
  minLength: 1,
  maxLength: MAX_APPLICATION_NAME_LENGTH,
  description: 'Letters, digits and . _ @ - (1 to 64)',
});

export const CreateApplicationBody = Type.Object(
  { name: ApplicationName, lane: Type.Optional(LaneSchema) },
  { additionalProperties: false },
);
export type CreateApplicationBody = Static<typeof CreateApplicationBody>;

/** What PATCH changes: any of the name, the lane and the content retention (null: back to the default). */
export const UpdateApplicationBody = Type.Object(
  {
    name: Type.Optional(ApplicationName),
    lane: Type.Optional(LaneSchema),
    contentRetentionDays: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
        description: 'Days its final mails keep their content, 0 to RETENTION_DAYS; null: CONTENT_RETENTION_DAYS',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateApplicationBody = Static<typeof UpdateApplicationBody>;

export const RotateApplicationBody = Type.Object(
  {
    graceSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_ROTATION_GRACE_SECONDS,
        description: `How long the old key keeps working, 0 to ${MAX_ROTATION_GRACE_SECONDS} (default ${DEFAULT_ROTATION_GRACE_SECONDS})`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type RotateApplicationBody = Static<typeof RotateApplicationBody>;
