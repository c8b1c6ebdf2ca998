/**
 * What the Relays view says about a relay (docs/console.md §10.22): pure, so each sentence is tested without a
 * browser. The state is always a word (never a colour alone); figures are per the contract's `RelayHealth`.
 */
import { DEFAULT_RELAY_NAME, type Relay, type RelayHealth, type RelayState } from '@outbox/contract';

/**
 * Besides the workers' states: `unknown`, the server gave no health (it has no such call, or the call failed);
 * `checking`, its first answer has not come yet.
 */
export type RelayStateShown = RelayState | 'unknown' | 'checking';

export const RELAY_STATE_LABELS: Readonly<Record<RelayStateShown, string>> = {
  up: 'Up',
  throttled: 'Throttled',
  down: 'Down',
  idle: 'Idle',
  unknown: 'Unknown',
  checking: 'Checking…',
};

/** What each state means, for the state's tooltip. */
export const RELAY_STATE_HINTS: Readonly<Record<RelayStateShown, string>> = {
  up: 'Its last answers were clean.',
  throttled: 'It answered a throttling reply; the workers send to it more slowly until its replies are clean.',
  down: 'It cannot be reached or defers everything; its mails go to the next relay of their route.',
  idle: 'No live worker has sent through it since it started.',
  unknown: 'This server does not report relay health.',
  checking: 'Asking the server for relay health.',
};

/** One line of the view: a named relay, or the default one (RELAY_URL), with what the workers report of it. */
export interface RelayRow {
  name: string;
  /** null: the default relay, which is configured by RELAY_URL, not here. */
  relay: Relay | null;
  /** null: no line for it (a relay no worker reported on while health is known is idle). */
  health: RelayHealth | null;
  state: RelayStateShown;
}

/**
 * The default relay first (routes name it `default`), then the named relays by name, each with its health line.
 * `health` undefined: not answered yet; null: the server has no relay health (or it failed).
 */
export function relayRowsOf(relays: readonly Relay[], health: readonly RelayHealth[] | null | undefined): RelayRow[] {
  const healthOf = new Map((health ?? []).map((line) => [line.relay, line]));
  const rowOf = (name: string, relay: Relay | null): RelayRow => {
    const line = healthOf.get(name) ?? null;
    return { name, relay, health: line, state: line ? line.state : health ? 'idle' : health === null ? 'unknown' : 'checking' };
  };
  return [
    rowOf(DEFAULT_RELAY_NAME, null),
    ...[...relays].sort((a, b) => a.name.localeCompare(b.name)).map((relay) => rowOf(relay.name, relay)),
  ];
}

const count = (value: number) => value.toLocaleString('en-US');

/** "12.5/s of 50/s", "3/s, no limit", "No limit"; without health, the limit alone. Per worker process (docs/relays.md). */
export function rateText(health: RelayHealth | null, maxPerSecond: number | null): string {
  if (!health) return maxPerSecond === null ? 'No limit' : `Limit ${count(maxPerSecond)}/s`;
  const rate = health.ratePerSecond;
  const now = rate === null ? null : `${count(Math.round(rate * 10) / 10)}/s`;
  if (maxPerSecond === null) return now === null ? 'No limit' : `${now}, no limit`;
  return `${now ?? '—'} of ${count(maxPerSecond)}/s`;
}

/** "1,234 sent today", and the quota's share when there is one: "12 % of 10,000 a day used"; without health, the quota. */
export function quotaText(health: RelayHealth | null, maxPerDay: number | null): { sent: string; quota: string } {
  const sent = health ? `${count(health.sentToday)} sent today` : '—';
  if (maxPerDay === null) return { sent, quota: 'No daily quota' };
  if (!health) return { sent, quota: `Quota ${count(maxPerDay)} a day` };
  const used = health?.quotaUsed ?? null;
  return { sent, quota: `${used === null ? '—' : `${Math.round(used * 100)} %`} of ${count(maxPerDay)} a day used` };
}

/** "85 ms" (median of recent sends), or "—". */
export function latencyText(health: RelayHealth | null): string {
  const latency = health?.latencyMs ?? null;
  return latency === null ? '—' : `${count(Math.round(latency))} ms`;
}

export function workersText(health: RelayHealth | null): string | null {
  if (!health) return null;
  return `${count(health.workers)} ${health.workers === 1 ? 'worker' : 'workers'}`;
}

/** How the relay is reached: "TLS required · login set · 5 connections". */
export function connectionText(relay: Relay): string {
  const tls = relay.tls === 'require' ? 'TLS required' : relay.tls === 'opportunistic' ? 'TLS when offered' : 'no TLS';
  return [tls, relay.hasCredentials ? 'login set' : 'no login', `${count(relay.maxConnections)} connections`].join(' · ');
}
