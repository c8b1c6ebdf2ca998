/** Texts of the webhooks panel, kept pure so the tests read them as an operator does. */
import type { WebhookAttempt, WebhookEndpoint } from '@outbox/contract';

const DISABLED_REASON: Record<NonNullable<WebhookEndpoint['disabledReason']>, string> = {
  operator: 'Disabled',
  gone: 'Disabled: the receiver answered 410 Gone',
  failing: 'Disabled: failing for 5 days',
};

export function stateText(endpoint: WebhookEndpoint): string {
  if (!endpoint.enabled) return endpoint.disabledReason ? DISABLED_REASON[endpoint.disabledReason] : 'Disabled';
  return endpoint.failingSince ? 'Enabled, failing' : 'Enabled';
}

/** "98 % of 120" over the last 24 hours, or "No attempts". */
export function successText(endpoint: WebhookEndpoint): string {
  const { attempts, successRate } = endpoint.last24h;
  if (attempts === 0 || successRate === null) return 'No attempts';
  const percent = Math.round(successRate * 1000) / 10;
  return `${percent} % of ${attempts.toLocaleString('en-US')}`;
}

export function eventsText(endpoint: WebhookEndpoint): string {
  return endpoint.eventTypes.length === 0 ? 'Every event' : endpoint.eventTypes.join(', ');
}

export function applicationText(endpoint: WebhookEndpoint): string {
  return endpoint.application ? endpoint.application.name : 'All applications';
}

/** "200 OK in 35 ms", "500 in 12 ms", "timeout after 10000 ms". */
export function attemptText(attempt: WebhookAttempt): string {
  if (attempt.httpStatus === null) return attempt.error ?? 'No answer';
  return `HTTP ${attempt.httpStatus} in ${attempt.durationMs} ms`;
}
