/**
 * Webhook endpoints and their deliveries (docs/webhooks.md). Operators manage
 * endpoints; Outbox delivers every matching application event to each as a Standard Webhooks request and logs
 * every attempt.
 */
import { Type, type Static } from '@sinclair/typebox';
import { APPLICATION_EVENT_TYPES, type ApplicationEventType } from './application-events.js';
import { Instant } from './common.js';

export const MAX_WEBHOOK_URL_LENGTH = 2048;
export const MAX_WEBHOOK_DESCRIPTION_LENGTH = 500;
/** How much of a receiver's answer is kept per attempt. */
export const WEBHOOK_RESPONSE_EXCERPT_BYTES = 1024;
export const MAX_WEBHOOK_DELIVERIES_LIMIT = 200;
/** The type of the event `POST /api/v1/webhooks/{id}/test` sends to that endpoint alone. */
export const WEBHOOK_TEST_EVENT_TYPE = 'webhook.test';

export const ApplicationEventTypeSchema = Type.Unsafe<ApplicationEventType>({
  type: 'string',
  enum: [...APPLICATION_EVENT_TYPES],
  description: 'An application event type (docs/webhooks.md#events)',
});

/** Why an endpoint is disabled: an operator did it, the receiver answered 410 Gone, or it failed for 5 days. */
export const WEBHOOK_DISABLED_REASONS = ['operator', 'gone', 'failing'] as const;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];

export const WebhookApplication = Type.Object({
  id: Type.Integer(),
  name: Type.String({ description: 'The API key (application) name' }),
});
export type WebhookApplication = Static<typeof WebhookApplication>;

export const WebhookEndpoint = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  description: Type.String(),
  eventTypes: Type.Array(ApplicationEventTypeSchema, { description: 'The events it wants; empty: every type' }),
  application: Type.Union([WebhookApplication, Type.Null()], { description: "One application's mail only; null: all applications" }),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.Unsafe<WebhookDisabledReason>({ type: 'string', enum: [...WEBHOOK_DISABLED_REASONS] }), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  /** Since when every attempt has failed (null while the last attempt succeeded or none was made). */
  failingSince: Instant,
  /** Until when the previous secret still signs beside the current one (null: no rotation in progress). */
  previousSecretExpiresAt: Instant,
  last24h: Type.Object({
    attempts: Type.Integer(),
    succeeded: Type.Integer(),
    failed: Type.Integer(),
    /** succeeded / attempts, 0..1; null with no attempt. */
    successRate: Type.Union([Type.Number(), Type.Null()]),
  }),
});
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

/** An endpoint as answered by create and rotate: the only time its secret (`whsec_…`) is shown. */
export const WebhookEndpointWithSecret = Type.Intersect([WebhookEndpoint, Type.Object({ secret: Type.String() })]);
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>;

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: MAX_WEBHOOK_URL_LENGTH, description: 'http(s) URL the events are POSTed to' }),
    description: Type.Optional(Type.String({ maxLength: MAX_WEBHOOK_DESCRIPTION_LENGTH })),
    eventTypes: Type.Optional(Type.Array(ApplicationEventTypeSchema, { uniqueItems: true })),
    applicationId: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Partial(CreateWebhookBody, { additionalProperties: false });
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>;

export const WEBHOOK_DELIVERY_STATES = ['pending', 'retrying', 'succeeded', 'failed'] as const;
export type WebhookDeliveryState = (typeof WEBHOOK_DELIVERY_STATES)[number];

export const WebhookAttempt = Type.Object({
  at: Type.String({ format: 'date-time' }),
  /** The receiver's HTTP status; null when none came (timeout, refused connection, refused address). */
  httpStatus: Type.Union([Type.Integer(), Type.Null()]),
  durationMs: Type.Integer(),
  /** The first WEBHOOK_RESPONSE_EXCERPT_BYTES of the answer's body. */
  response: Type.String(),
  /** Why it failed without an HTTP status (e.g. 'timeout after 10000 ms', 'connection refused'). */
  error: Type.Union([Type.String(), Type.Null()]),
});
export type WebhookAttempt = Static<typeof WebhookAttempt>;

export const WebhookDelivery = Type.Object({
  id: Type.Integer(),
  endpointId: Type.Integer(),
  endpointUrl: Type.String(),
  eventId: Type.String({ description: 'The event id, sent as webhook-id on every attempt' }),
  eventType: Type.String(),
  mailId: Type.Union([Type.Integer(), Type.Null()]),
  state: Type.Unsafe<WebhookDeliveryState>({ type: 'string', enum: [...WEBHOOK_DELIVERY_STATES] }),
  createdAt: Type.String({ format: 'date-time' }),
  /** When the next attempt is due (null once succeeded or failed for good). */
  nextAttemptAt: Instant,
  /** Every attempt, oldest first. */
  attempts: Type.Array(WebhookAttempt),
});
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_DELIVERIES_LIMIT, description: 'Deliveries per page (default 50)' }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'meta.nextCursor of the previous page' })),
    state: Type.Optional(Type.Unsafe<WebhookDeliveryState>({ type: 'string', enum: [...WEBHOOK_DELIVERY_STATES] })),
  },
  { additionalProperties: false },
);
export type WebhookDeliveriesQuery = Static<typeof WebhookDeliveriesQuery>;

export const WebhookDeliveriesResponse = Type.Object({
  data: Type.Array(WebhookDelivery),
  meta: Type.Object({ nextCursor: Type.Union([Type.String(), Type.Null()]) }),
});
export type WebhookDeliveriesResponse = Static<typeof WebhookDeliveriesResponse>;

/** `GET /api/v1/mail/{id}/webhook-deliveries`: one page of a mail's deliveries, oldest first. */
export const MailWebhookDeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_WEBHOOK_DELIVERIES_LIMIT, description: 'Deliveries per page (default 50)' }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'meta.nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type MailWebhookDeliveriesQuery = Static<typeof MailWebhookDeliveriesQuery>;

/** `POST /api/v1/webhooks/{id}/replay`: one event again, or every failed delivery since an instant. */
export const ReplayWebhookBody = Type.Union([
  Type.Object({ eventId: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
  Type.Object({ failedSince: Type.String({ format: 'date-time' }) }, { additionalProperties: false }),
]);
export type ReplayWebhookBody = Static<typeof ReplayWebhookBody>;

export const ReplayWebhookResult = Type.Object({ queued: Type.Integer({ description: 'Deliveries queued again' }) });
export type ReplayWebhookResult = Static<typeof ReplayWebhookResult>;

export const WebhookTestResult = Type.Object({ eventId: Type.String() });
export type WebhookTestResult = Static<typeof WebhookTestResult>;
