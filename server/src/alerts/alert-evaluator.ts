/**
 * The alert evaluator (docs/alerts.md): every ALERT_EVALUATION_INTERVAL, in one transaction, it measures each
 * rule and moves its state (ok → pending → firing → resolved, ok again when a pending condition clears). Every
 * transition is written to alert_history; a firing or a resolution is also written to the audit log (actor
 * `system`) and appended as `alert.firing` / `alert.resolved` application events, all in that transaction, so
 * webhook delivery sees an event exactly when the state changed.
 *
 * One evaluator at a time: on PostgreSQL the transaction starts with pg_try_advisory_xact_lock (another
 * instance holding it skips its round), and a round done by any instance less than half an interval ago is not
 * repeated. On SQLite there is one process. The state is in the store, so a restart or a hand-over neither
 * forgets a firing alert nor fires it again.
 */
import type { AlertEventData, AlertRuleName, AlertState } from '@outbox/contract';
import { insertAuditEntries, type AuditEntry } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { appendApplicationEvents, newEventId } from '../events/application-events.repository.js';
import type { Store } from '../store/connection.js';
import type { NewApplicationEventRow } from '../store/schema.js';
import { alertRules, type AlertRule, type AlertSettings, type Measurement, type WebhookFailureSource } from './alert-rules.js';
import * as repo from './alerts.repository.js';

/** The change-feed type told to every instance's live hub after a round changed a state. */
export const ALERTS_CHANGED = 'alerts-changed';

export interface AlertTransitionOutcome {
  rule: AlertRuleName;
  from: AlertState;
  to: AlertState;
}

export interface AlertEvaluatorOptions {
  store: Store;
  clock: Clock;
  settings: AlertSettings;
  webhooks?: WebhookFailureSource;
  logger?: Logger;
}

/** The next state of one rule: pure, so the state machine is tested without a store. */
export function nextState(
  previous: repo.AlertStateRow | undefined,
  rule: Pick<AlertRule, 'name' | 'pendingMs'>,
  measured: Measurement | undefined,
  now: number,
  cooldownMs: number,
): { row: repo.AlertStateRow; transitions: Array<{ from: AlertState; to: AlertState }> } {
  const from = (previous?.state ?? 'ok') as AlertState;
  const row: repo.AlertStateRow = {
    rule: rule.name,
    state: from,
    since: previous?.since ?? now,
    pending_since: previous?.pending_since ?? null,
    firing_since: previous?.firing_since ?? null,
    resolved_at: previous?.resolved_at ?? null,
    value: measured?.value ?? null,
    threshold: measured?.threshold ?? previous?.threshold ?? 0,
    summary: measured?.summary ?? 'Inactive: nothing to measure on this server',
    evaluated_at: now,
    firings: previous?.firings ?? 0,
  };
  const transitions: Array<{ from: AlertState; to: AlertState }> = [];
  const move = (to: AlertState) => {
    transitions.push({ from: row.state as AlertState, to });
    row.state = to;
    row.since = now;
  };
  if (measured === undefined) {
    if (previous === undefined) {
      row.state = 'inactive';
      return { row, transitions };
    }
    // A firing alert whose rule can no longer be measured is resolved first: it must not stay firing forever.
    if (row.state === 'firing') {
      move('resolved');
      row.resolved_at = now;
    }
    if (row.state !== 'inactive') move('inactive');
    return { row, transitions };
  }
  if (measured.active) {
    if (row.state !== 'pending' && row.state !== 'firing') {
      move('pending');
      row.pending_since = now;
    }
    const heldLongEnough = row.state === 'pending' && now - (row.pending_since ?? now) >= rule.pendingMs;
    const cooledDown = row.resolved_at === null || now - row.resolved_at >= cooldownMs;
    if (heldLongEnough && cooledDown) {
      move('firing');
      row.firing_since = now;
      row.firings += 1;
    }
  } else if (row.state === 'firing') {
    move('resolved');
    row.resolved_at = now;
    row.pending_since = null;
  } else if (row.state === 'pending' || row.state === 'inactive') {
    move('ok');
    row.pending_since = null;
  }
  return { row, transitions };
}

export function createAlertEvaluator(options: AlertEvaluatorOptions) {
  const { store, clock, settings, logger } = options;
  const rules = alertRules(settings, options.webhooks);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<AlertTransitionOutcome[]> | undefined;

  /** One round. Returns the transitions it made; [] when another instance evaluates (or has just done so). */
  async function evaluate(): Promise<AlertTransitionOutcome[]> {
    const now = clock.now();
    const outcomes: AlertTransitionOutcome[] = [];
    await store.db.transaction().execute(async (trx) => {
      if (store.engine === 'postgres' && !(await repo.tryEvaluatorLock(trx))) return;
      const states = new Map((await repo.listAlertStates(trx)).map((row) => [row.rule, row]));
      const latest = Math.max(0, ...[...states.values()].map((row) => row.evaluated_at));
      if (states.size > 0 && now - latest < settings.intervalMs / 2 && now >= latest) return;
      const history: Parameters<typeof repo.insertAlertHistory>[1] = [];
      const events: NewApplicationEventRow[] = [];
      const audit: AuditEntry[] = [];
      for (const rule of rules) {
        const measured = rule.measure ? await rule.measure(trx, now) : undefined;
        const { row, transitions } = nextState(states.get(rule.name), rule, measured, now, settings.cooldownMs);
        await repo.upsertAlertState(trx, row);
        for (const { from, to } of transitions) {
          outcomes.push({ rule: rule.name, from, to });
          history.push({
            rule: rule.name,
            from_state: from,
            to_state: to,
            at: now,
            value: row.value,
            threshold: row.threshold,
            summary: row.summary,
          });
          if (to !== 'firing' && !(to === 'resolved' && from === 'firing')) continue;
          const data: AlertEventData = {
            rule: rule.name,
            state: to,
            value: row.value,
            threshold: row.threshold,
            since: new Date(row.firing_since ?? now).toISOString(),
            summary: row.summary,
          };
          const type = to === 'firing' ? 'alert.firing' : 'alert.resolved';
          events.push({
            id: newEventId(),
            type,
            mail_id: null,
            mail_seq: null,
            api_key_id: null,
            created_at: now,
            payload: JSON.stringify(data),
          });
          audit.push({ at: now, actor: 'system', action: type, target: rule.name, after: data });
        }
      }
      await repo.insertAlertHistory(trx, history);
      await appendApplicationEvents(trx, events);
      await insertAuditEntries(trx, audit);
    });
    if (outcomes.length > 0) {
      for (const outcome of outcomes) {
        if (outcome.to === 'firing' || outcome.to === 'resolved')
          logger?.warn({ alert: outcome.rule, state: outcome.to }, `alert ${outcome.rule} ${outcome.to}`);
      }
      // After the commit: every instance's live hub tells its consoles (on PostgreSQL through LISTEN/NOTIFY).
      store.changes.publish({ type: ALERTS_CHANGED, ids: [] });
    }
    return outcomes;
  }

  /** Rounds never overlap: a slow store delays the next one. */
  function tick(): Promise<AlertTransitionOutcome[]> {
    running ??= evaluate()
      .catch((error: unknown) => {
        logger?.error({ err: error }, 'alert evaluation failed; trying again at the next interval');
        return [];
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    evaluate,
    start(): void {
      if (timer || !settings.enabled) return;
      void tick();
      timer = setInterval(() => void tick(), settings.intervalMs);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}

export type AlertEvaluator = ReturnType<typeof createAlertEvaluator>;
