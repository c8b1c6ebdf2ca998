/** The ALERT_* variables: alert rules' thresholds and timing (alerts/alert-rules.ts, docs/alerts.md). */
import type { EnvReader } from './env-reader.js';

/** The alert rules' settings (alerts/alert-rules.ts reads them as its AlertSettings). */
export interface AlertConfig {
  /** ALERTS (on): off stops evaluation on this instance; GET /api/v1/alerts still answers the stored state. */
  enabled: boolean;
  /** ALERT_EVALUATION_INTERVAL (30 s). */
  intervalMs: number;
  /** ALERT_PENDING (1 min): how long a condition must hold before its rule fires. */
  pendingMs: number;
  /** ALERT_COOLDOWN (10 min): after a rule resolves, it does not fire again before this has passed. */
  cooldownMs: number;
  /** ALERT_WINDOW (15 min): the window of the failure and bounce rates. */
  windowMs: number;
  /** ALERT_MIN_ATTEMPTS (20): fewer attempts (or sent mails) in the window judge no rate. */
  minAttempts: number;
  /** ALERT_FAILURE_RATE (0.2). */
  failureRate: number;
  /** ALERT_OLDEST_DUE (10 min): a Queued mail due for longer than this. */
  oldestDueMs: number;
  /** ALERT_NO_WORKER_FOR (1 min): the pending period of the no-worker rule. */
  noWorkerForMs: number;
  /** ALERT_BOUNCE_RATE (0.05): bounces and complaints per mail sent in the window. */
  bounceRate: number;
  /** ALERT_WEBHOOK_FAILING_FOR (1 h). */
  webhookFailingMs: number;
  /** ALERT_RELAY_DOWN_FOR (1 min): the pending period of the relay-down rule. */
  relayDownForMs: number;
  /** ALERT_RELAY_QUOTA (0.9): the share of a relay's daily quota that fires the relay-quota rule. */
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
