/**
 * Alert reads (docs/alerts.md): every rule's stored state as the contract's `AlertRuleStatus`, the recent
 * history, and the figures of /metrics. A rule never evaluated yet reads `ok` with its configured threshold.
 */
import type { AlertRuleStatus, AlertsResponse, AlertState, AlertTransition } from '@outbox/contract';
import type { Clock } from '../clock.js';
import type { Store } from '../store/connection.js';
import { alertRules, type AlertSettings, type WebhookFailureSource } from './alert-rules.js';
import * as repo from './alerts.repository.js';

const HISTORY_LIMIT = 50;
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function createAlertService({
  store,
  clock,
  settings,
  webhooks,
}: {
  store: Store;
  clock: Clock;
  settings: AlertSettings;
  webhooks?: WebhookFailureSource;
}) {
  const rules = alertRules(settings, webhooks);

  async function listRuleStatuses(): Promise<AlertRuleStatus[]> {
    const rows = new Map((await repo.listAlertStates(store.db)).map((row) => [row.rule, row]));
    return rules.map((rule) => {
      const row = rows.get(rule.name);
      return {
        rule: rule.name,
        title: rule.title,
        state: (row?.state as AlertState | undefined) ?? (rule.measure ? 'ok' : 'inactive'),
        since: iso(row?.state === 'firing' ? row.firing_since : (row?.since ?? null)),
        value: row?.value ?? null,
        threshold: rule.threshold,
        unit: rule.unit,
        summary: row?.summary ?? (rule.measure ? 'Not evaluated yet' : 'Inactive: nothing to measure on this server'),
        lastEvaluatedAt: iso(row?.evaluated_at ?? null),
      };
    });
  }

  async function listAlerts(): Promise<AlertsResponse> {
    const [data, history] = await Promise.all([listRuleStatuses(), repo.listAlertHistory(store.db, HISTORY_LIMIT)]);
    return {
      data,
      meta: {
        at: new Date(clock.now()).toISOString(),
        firing: data.filter((rule) => rule.state === 'firing').length,
        evaluationIntervalSeconds: settings.intervalMs / 1000,
        history: history.map((row): AlertTransition => ({
          id: row.id,
          rule: row.rule as AlertTransition['rule'],
          from: row.from_state as AlertState,
          to: row.to_state as AlertState,
          at: new Date(row.at).toISOString(),
          value: row.value,
          threshold: row.threshold,
          summary: row.summary,
        })),
      },
    };
  }

  /** For /metrics: each rule's state, and its firings since the store began (the same on every instance). */
  async function metricsFigures(): Promise<Array<{ rule: string; state: AlertState; firings: number }>> {
    const rows = new Map((await repo.listAlertStates(store.db)).map((row) => [row.rule, row]));
    return rules.map((rule) => {
      const row = rows.get(rule.name);
      return {
        rule: rule.name,
        state: (row?.state as AlertState | undefined) ?? (rule.measure ? 'ok' : 'inactive'),
        firings: row?.firings ?? 0,
      };
    });
  }

  return { listAlerts, listRuleStatuses, metricsFigures };
}

export type AlertService = ReturnType<typeof createAlertService>;
