/**
 * The events Outbox tells applications about (PRODUCT.md §8): written in the transaction of the change they
 * describe, delivered to webhook endpoints as Standard Webhooks (`{type, timestamp, data}`), each with a stable
 * id (`evt_…`, the `webhook-id`) and, for mail events, a per-mail sequence number. docs/webhooks.md describes
 * every type's `data`.
 */
export const APPLICATION_EVENT_TYPES = [
  'mail.queued',
  'mail.sent',
  'mail.deferred',
  'mail.failed',
  'mail.dequeued',
  'mail.requeued',
  'mail.deleted',
  'mail.bounced',
  'mail.complained',
  'mail.suppressed',
  'alert.firing',
  'alert.resolved',
] as const;

export type ApplicationEventType = (typeof APPLICATION_EVENT_TYPES)[number];

export function isApplicationEventType(value: string): value is ApplicationEventType {
  return (APPLICATION_EVENT_TYPES as readonly string[]).includes(value);
}
