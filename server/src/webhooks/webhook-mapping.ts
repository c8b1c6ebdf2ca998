/**
 * Webhook rows as the contract's types: an endpoint with its last 24 hours, a delivery with its attempts. The
 * services answer these; rows never leave them.
 */
import type { WebhookAttempt, WebhookDelivery, WebhookDeliveryState, WebhookDisabledReason, WebhookEndpoint } from '@outbox/contract';
import type { WebhookAttemptRow, WebhookDeliveryRow } from '../store/schema.js';
import type { EndpointWithApplication } from './webhook.repository.js';

export const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(Number(ms)));

/** `stats`: the endpoint's attempts of the last 24 hours; `now` hides a previous secret that no longer signs. */
export function toEndpoint(
  row: EndpointWithApplication,
  stats: { attempts: number; succeeded: number } | undefined,
  now: number,
): WebhookEndpoint {
  const attempts = stats?.attempts ?? 0;
  const succeeded = stats?.succeeded ?? 0;
  const previousExpires = row.previous_secret_expires_at === null ? null : Number(row.previous_secret_expires_at);
  return {
    id: Number(row.id),
    url: row.url,
    description: row.description,
    eventTypes: JSON.parse(row.event_types) as WebhookEndpoint['eventTypes'],
    application: row.api_key_id === null ? null : { id: Number(row.api_key_id), name: row.application_name ?? `#${row.api_key_id}` },
    enabled: row.enabled === 1,
    disabledReason: (row.disabled_reason as WebhookDisabledReason | null) ?? null,
    createdAt: iso(Number(row.created_at)),
    updatedAt: iso(Number(row.updated_at)),
    failingSince: isoOrNull(row.failing_since),
    previousSecretExpiresAt: previousExpires !== null && previousExpires > now ? iso(previousExpires) : null,
    last24h: { attempts, succeeded, failed: attempts - succeeded, successRate: attempts === 0 ? null : succeeded / attempts },
  };
}

export function toAttempt(row: WebhookAttemptRow): WebhookAttempt {
  return {
    at: iso(Number(row.at)),
    httpStatus: row.http_status,
    durationMs: row.duration_ms,
    response: row.response,
    error: row.error,
  };
}

export function toDelivery(row: WebhookDeliveryRow, endpointUrl: string, attempts: WebhookAttempt[]): WebhookDelivery {
  return {
    id: Number(row.id),
    endpointId: Number(row.endpoint_id),
    endpointUrl,
    eventId: row.event_id,
    eventType: row.event_type,
    mailId: row.mail_id === null ? null : Number(row.mail_id),
    state: row.state as WebhookDeliveryState,
    createdAt: iso(Number(row.created_at)),
    nextAttemptAt: isoOrNull(row.next_attempt_at),
    attempts,
  };
}
