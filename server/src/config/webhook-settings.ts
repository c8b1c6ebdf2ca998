/** Webhook delivery's settings (docs/webhooks.md). */
import type { EnvReader } from './env-reader.js';

export interface WebhookSettings {
  /** WEBHOOKS: whether this process delivers webhooks (it also needs WORKER on); docs/webhooks.md. */
  webhooks: boolean;
  /** WEBHOOK_TIMEOUT: one delivery attempt, connection to the end of the answer. */
  webhookTimeoutMs: number;
  /** WEBHOOK_RETRY_SCHEDULE: the delay before each attempt of a delivery, the first included. */
  webhookRetrySchedule: number[];
  /** WEBHOOK_ALLOW_PRIVATE: endpoints on loopback, private and link-local addresses are allowed. */
  webhookAllowPrivate: boolean;
  /** WEBHOOK_CONCURRENCY: webhook requests in flight at once per process. */
  webhookConcurrency: number;
}

export function readWebhookSettings({ env, problems, onOff, durationMs, retrySchedule, integer }: EnvReader): WebhookSettings {
  const settings: WebhookSettings = {
    webhooks: onOff('WEBHOOKS', true),
    webhookTimeoutMs: durationMs('WEBHOOK_TIMEOUT', 10_000),
    // Svix's schedule; webhooks/webhook-policy.ts holds the same list for callers without config.
    webhookRetrySchedule: retrySchedule(
      'WEBHOOK_RETRY_SCHEDULE',
      [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    ),
    webhookAllowPrivate: onOff('WEBHOOK_ALLOW_PRIVATE', false),
    webhookConcurrency: integer('WEBHOOK_CONCURRENCY', 32, 1, 1000),
  };
  if (settings.webhookTimeoutMs > 120_000) problems.push(`WEBHOOK_TIMEOUT must be at most 120s, got "${env.WEBHOOK_TIMEOUT}"`);
  return settings;
}
