import { Type, type Static } from '@sinclair/typebox';

/**
 * Alert rules (docs/alerts.md): built-in rules over the store, evaluated by one instance at a
 * time, each ok → pending → firing → resolved. `GET /api/v1/alerts` answers every rule's state and the recent
 * transitions; the live stream sends `event: alerts` when one changes.
 */
export const ALERT_RULES = [
  'failure_rate',
  'oldest_due',
  'no_worker',
  'bounce_rate',
  'webhook_failing',
  'relay_down',
  'relay_quota',
] as const;
export type AlertRuleName = (typeof ALERT_RULES)[number];

/**
 * ok: the condition does not hold; pending: it holds, not yet for the pending period; firing: it held for the
 * pending period (an episode: one `alert.firing`); resolved: it stopped holding after firing (one `alert.resolved`).
 * inactive: the rule cannot be evaluated on this server (e.g. no webhook endpoints table).
 */
export const ALERT_STATES = ['ok', 'pending', 'firing', 'resolved', 'inactive'] as const;
export type AlertState = (typeof ALERT_STATES)[number];

const RuleName = Type.Unsafe<AlertRuleName>({ type: 'string', enum: [...ALERT_RULES] });
const State = Type.Unsafe<AlertState>({ type: 'string', enum: [...ALERT_STATES] });
const NullableInstant = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const AlertRuleStatus = Type.Object({
  rule: RuleName,
  title: Type.String({ description: 'What the rule watches, in words, e.g. "Delivery failure rate"' }),
  state: State,
  since: NullableInstant,
  value: Type.Union([Type.Number(), Type.Null()], {
    description: 'The measured value at the last evaluation (a rate 0–1, seconds, or a count)',
  }),
  threshold: Type.Number({ description: 'The value the rule compares with, in the same unit' }),
  unit: Type.Unsafe<'ratio' | 'seconds' | 'count'>({ type: 'string', enum: ['ratio', 'seconds', 'count'] }),
  summary: Type.String({
    description: 'One sentence an operator can read, e.g. "42% of 50 delivery attempts failed in the last 15 min (threshold 20%)"',
  }),
  lastEvaluatedAt: NullableInstant,
});
export type AlertRuleStatus = Static<typeof AlertRuleStatus>;

export const AlertTransition = Type.Object({
  id: Type.Integer(),
  rule: RuleName,
  from: State,
  to: State,
  at: Type.String({ format: 'date-time' }),
  value: Type.Union([Type.Number(), Type.Null()]),
  threshold: Type.Number(),
  summary: Type.String(),
});
export type AlertTransition = Static<typeof AlertTransition>;

export const AlertsResponse = Type.Object({
  data: Type.Array(AlertRuleStatus, { description: 'Every built-in rule, in a fixed order' }),
  meta: Type.Object({
    at: Type.String({ format: 'date-time' }),
    firing: Type.Integer({ description: 'Rules firing now' }),
    evaluationIntervalSeconds: Type.Number(),
    history: Type.Array(AlertTransition, { description: 'The most recent transitions, newest first (at most 50)' }),
  }),
});
export type AlertsResponse = Static<typeof AlertsResponse>;

/** `event: alerts` on `GET /api/v1/events`: a rule changed state; read `GET /api/v1/alerts` (or use `firing`). */
export const LiveAlertsEvent = Type.Object({ firing: Type.Array(AlertRuleStatus) });
export type LiveAlertsEvent = Static<typeof LiveAlertsEvent>;

/** `data` of the `alert.firing` and `alert.resolved` application events (webhooks). */
export interface AlertEventData {
  rule: AlertRuleName;
  state: 'firing' | 'resolved';
  value: number | null;
  threshold: number;
  /** When the episode began firing (ISO 8601). */
  since: string;
  summary: string;
}
