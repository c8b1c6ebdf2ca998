/**
 * The built-in alert rules (docs/alerts.md). Each rule measures one figure from the store and
 * says whether its condition holds; the evaluator (alert-evaluator.ts) turns that into pending → firing →
 * resolved. Thresholds come from the configuration (ALERT_* variables, config.ts).
 */
import { MailStatus, type AlertRuleName, type RelayHealth } from '@outbox/contract';
import type { AlertConfig } from '../config/alert-settings.js';
import { countDeliveredSince, countChangedSince, countQueuedNotDue } from '../health/queue-health.repository.js';
import { isLive, parseRoles } from '../instances/instance.service.js';
import { listInstances } from '../instances/instance.repository.js';
import { getStatusCounts } from '../mail/mail.repository.js';
import { readRelayHealth } from '../relays/relay-health.service.js';
import type { DbOrTrx } from '../store/connection.js';
import { countMatchedBounceReports, findEarliestDue } from './alerts.repository.js';
import { bounceRate, failureRate } from './rates.js';

/** The alert rules' thresholds and timing: the ALERT_* variables (config/alert-settings.ts), each documented there. */
export type AlertSettings = AlertConfig;

export const DEFAULT_ALERT_SETTINGS: AlertSettings = {
  enabled: true,
  intervalMs: 30_000,
  pendingMs: 60_000,
  cooldownMs: 600_000,
  windowMs: 900_000,
  minAttempts: 20,
  failureRate: 0.2,
  oldestDueMs: 600_000,
  noWorkerForMs: 60_000,
  bounceRate: 0.05,
  webhookFailingMs: 3_600_000,
  relayDownForMs: 60_000,
  relayQuota: 0.9,
};

/**
 * The webhook endpoints' health, once the webhooks module is merged: the longest time any enabled endpoint has
 * failed without a success in between. Until a source is given the webhook rule is `inactive`.
 */
export interface WebhookFailureSource {
  longestFailing(db: DbOrTrx, now: number): Promise<{ endpointId: string | number; failingForMs: number } | undefined>;
}

export interface Measurement {
  /** The condition holds. */
  active: boolean;
  value: number | null;
  threshold: number;
  summary: string;
}

export interface AlertRule {
  name: AlertRuleName;
  title: string;
  unit: 'ratio' | 'seconds' | 'count';
  /** How long the condition must hold before firing. */
  pendingMs: number;
  threshold: number;
  /** undefined: the rule cannot be evaluated here (state `inactive`). */
  measure?: (db: DbOrTrx, now: number) => Promise<Measurement>;
}

const percent = (ratio: number) => `${Math.round(ratio * 1000) / 10}%`;
function duration(ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1000) return `${Math.round(ms / 1000)} s`;
  return `${ms} ms`;
}

/** A measured span, rounded down for reading: 42 s, 17 min, 3 h 5 min. */
function elapsed(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h${minutes % 60 === 0 ? '' : ` ${minutes % 60} min`}`;
}

export function alertRules(settings: AlertSettings, webhooks?: WebhookFailureSource): AlertRule[] {
  const window = duration(settings.windowMs);
  return [
    {
      name: 'failure_rate',
      title: 'Delivery failure rate',
      unit: 'ratio',
      pendingMs: settings.pendingMs,
      threshold: settings.failureRate,
      // The figures of queue health: mails failed (ProviderError, Error) by their last change, delivered by
      // provider_sent_at, both index ranges.
      async measure(db, now) {
        const since = now - settings.windowMs;
        const [providerErrors, errors, delivered] = await Promise.all([
          countChangedSince(db, MailStatus.ProviderError, since),
          countChangedSince(db, MailStatus.Error, since),
          countDeliveredSince(db, since),
        ]);
        const failed = providerErrors + errors;
        const attempts = failed + delivered;
        const rate = failureRate(failed, delivered);
        const active = rate !== null && attempts >= settings.minAttempts && rate > settings.failureRate;
        return {
          active,
          value: rate,
          threshold: settings.failureRate,
          summary:
            rate === null
              ? `No delivery attempts in the last ${window}`
              : `${percent(rate)} of ${attempts} delivery attempts failed in the last ${window} (threshold ${percent(settings.failureRate)}, at least ${settings.minAttempts} attempts)`,
        };
      },
    },
    {
      name: 'oldest_due',
      title: 'Oldest due mail',
      unit: 'seconds',
      pendingMs: settings.pendingMs,
      threshold: settings.oldestDueMs / 1000,
      async measure(db, now) {
        const earliest = await findEarliestDue(db, now);
        const waitedMs = earliest === undefined ? 0 : Math.max(0, now - earliest);
        return {
          active: earliest !== undefined && waitedMs > settings.oldestDueMs,
          value: waitedMs / 1000,
          threshold: settings.oldestDueMs / 1000,
          summary:
            earliest === undefined
              ? 'No Queued mail is due'
              : `The oldest due Queued mail has waited ${elapsed(waitedMs)} past its due time (threshold ${duration(settings.oldestDueMs)})`,
        };
      },
    },
    {
      name: 'no_worker',
      title: 'No worker running',
      unit: 'count',
      pendingMs: settings.noWorkerForMs,
      threshold: 0,
      // Due = Queued minus those waiting for a later retry, as queue health counts it; workers from heartbeats.
      async measure(db, now) {
        const [counts, notDue, instances] = await Promise.all([getStatusCounts(db), countQueuedNotDue(db, now), listInstances(db)]);
        const due = Math.max(0, (counts.get(MailStatus.Queued) ?? 0) - notDue);
        const liveWorkers = instances.filter((row) => isLive(row, now) && parseRoles(row.roles).includes('worker')).length;
        return {
          active: liveWorkers === 0 && due > 0,
          value: due,
          threshold: 0,
          summary:
            liveWorkers > 0
              ? `${liveWorkers} live worker${liveWorkers === 1 ? '' : 's'}`
              : `No live worker while ${due} mail${due === 1 ? ' is' : 's are'} due${
                  settings.noWorkerForMs > 0 ? ` (for ${duration(settings.noWorkerForMs)} before firing)` : ''
                }`,
        };
      },
    },
    {
      name: 'bounce_rate',
      title: 'Bounce and complaint rate',
      unit: 'ratio',
      pendingMs: settings.pendingMs,
      threshold: settings.bounceRate,
      async measure(db, now) {
        const since = now - settings.windowMs;
        const [reports, sent] = await Promise.all([countMatchedBounceReports(db, since), countDeliveredSince(db, since)]);
        const rate = bounceRate(reports, sent);
        return {
          active: rate !== null && sent >= settings.minAttempts && rate > settings.bounceRate,
          value: rate,
          threshold: settings.bounceRate,
          summary:
            rate === null
              ? `No mail sent in the last ${window}`
              : `${reports} bounces and complaints for ${sent} mails sent in the last ${window}: ${percent(rate)} (threshold ${percent(settings.bounceRate)})`,
        };
      },
    },
    {
      name: 'webhook_failing',
      title: 'Webhook endpoint failing',
      unit: 'seconds',
      pendingMs: settings.pendingMs,
      threshold: settings.webhookFailingMs / 1000,
      // Inactive until the webhooks module gives its failure source (wired in app.ts after that merge).
      ...(webhooks
        ? {
            async measure(db: DbOrTrx, now: number): Promise<Measurement> {
              const failing = await webhooks.longestFailing(db, now);
              const ms = failing?.failingForMs ?? 0;
              return {
                active: failing !== undefined && ms > settings.webhookFailingMs,
                value: ms / 1000,
                threshold: settings.webhookFailingMs / 1000,
                summary:
                  failing === undefined
                    ? 'No webhook endpoint is failing'
                    : `Webhook endpoint ${failing.endpointId} has failed for ${elapsed(ms)} (threshold ${duration(settings.webhookFailingMs)})`,
              };
            },
          }
        : {}),
    },
    {
      name: 'relay_down',
      title: 'Relay down',
      unit: 'count',
      // Like no_worker: the condition is "some relay is down", and how long it must hold is the rule's own setting.
      pendingMs: settings.relayDownForMs,
      threshold: 0,
      async measure(db, now) {
        const down = (await readRelayHealth(db, now)).filter((relay) => relay.state === 'down');
        return {
          active: down.length > 0,
          value: down.length,
          threshold: 0,
          summary:
            down.length === 0
              ? 'Every relay a live worker sends through answers'
              : `${down.map((relay) => `Relay ${relay.relay} is down${relay.lastError ? ` (${relay.lastError})` : ''}`).join('; ')}${
                  settings.relayDownForMs > 0 ? ` (for ${duration(settings.relayDownForMs)} before firing)` : ''
                }`,
        };
      },
    },
    {
      name: 'relay_quota',
      title: 'Relay quota nearly used',
      unit: 'ratio',
      pendingMs: settings.pendingMs,
      threshold: settings.relayQuota,
      async measure(db, now) {
        const quotas = (await readRelayHealth(db, now)).filter((relay) => relay.quotaUsed !== null);
        const fullest = quotas.reduce<RelayHealth | undefined>(
          (found, relay) => (found === undefined || relay.quotaUsed! > found.quotaUsed! ? relay : found),
          undefined,
        );
        const used = fullest?.quotaUsed ?? null;
        return {
          active: used !== null && used >= settings.relayQuota,
          value: used,
          threshold: settings.relayQuota,
          summary:
            fullest === undefined
              ? 'No relay has a daily quota (maxPerDay)'
              : `Relay ${fullest.relay} used ${percent(used!)} of its daily quota of ${fullest.maxPerDay} in one worker process (threshold ${percent(settings.relayQuota)})`,
        };
      },
    },
  ];
}
