/** The ALERT_* variables: alert rules' thresholds and timing (alerts/alert-rules.ts, docs/alerts.md). */
import type { EnvReader } from './env-reader.js';

/** The shape of alerts/alert-rules.ts's AlertSettings (configuration imports nothing of the alerts). */
export interface AlertConfig {
  enabled: boolean;
  intervalMs: number;
  pendingMs: number;
  cooldownMs: number;
  windowMs: number;
  minAttempts: number;
  failureRate: number;
  oldestDueMs: number;
  noWorkerForMs: number;
  bounceRate: number;
  webhookFailingMs: number;
  relayDownForMs: number;
  relayQuota: number;
}

export function readAlertSettings({ onOff, durationMs, durationMsOrZero, integer, ratio }: EnvReader): { alerts: AlertConfig } {
  return {
    alerts: {
      enabled: onOff('ALERTS', true),
      intervalMs: durationMs('ALERT_EVALUATION_INTERVAL', 30_000),
      pendingMs: durationMsOrZero('ALERT_PENDING', 60_000),
      cooldownMs: durationMsOrZero('ALERT_COOLDOWN', 600_000),
      windowMs: durationMs('ALERT_WINDOW', 900_000),
      minAttempts: integer('ALERT_MIN_ATTEMPTS', 20, 1, 1_000_000),
      failureRate: ratio('ALERT_FAILURE_RATE', 0.2),
      oldestDueMs: durationMs('ALERT_OLDEST_DUE', 600_000),
      noWorkerForMs: durationMsOrZero('ALERT_NO_WORKER_FOR', 60_000),
      bounceRate: ratio('ALERT_BOUNCE_RATE', 0.05),
      webhookFailingMs: durationMs('ALERT_WEBHOOK_FAILING_FOR', 3_600_000),
      relayDownForMs: durationMsOrZero('ALERT_RELAY_DOWN_FOR', 60_000),
      relayQuota: ratio('ALERT_RELAY_QUOTA', 0.9),
    },
  };
}
