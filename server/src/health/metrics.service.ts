/**
 * `GET /metrics` in the Prometheus text format (docs/api.md#routes): the queue as the store holds it (mails per
 * status, age of the oldest Queued mail) read at scrape time, plus this process's own figures from
 * prom-client's default collectors. Store figures are the same on every instance sharing a database, so a
 * dashboard takes them from any one instance.
 */
import client from 'prom-client';
import { ALERT_STATES, RELAY_STATES, STATUSES, type RelayHealth } from '@outbox/contract';
import type { Clock } from '../clock.js';
import type { AlertService } from '../alerts/alert.service.js';
import type { InstanceService } from '../instances/instance.service.js';
import type { RelayHealthService } from '../relays/relay-health.service.js';
import type { MailService } from '../mail/mail.service.js';

export const LOGIN_FAILURE_REASONS = ['invalid_credentials', 'pair_limit', 'client_limit', 'name_limit'] as const;
export type LoginFailureReason = (typeof LOGIN_FAILURE_REASONS)[number];

export function createMetricsService({
  mails,
  clock,
  instances,
  alerts,
  relayHealth,
}: {
  mails: MailService;
  clock: Clock;
  instances: InstanceService;
  alerts?: AlertService;
  relayHealth?: RelayHealthService;
}) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'outbox_' });

  new client.Gauge({
    name: 'outbox_mails',
    help: 'Mails in the store, by status (exact: maintained counters).',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const { counts } = await mails.queueHealth();
      for (const status of STATUSES) this.set({ status: status.name }, counts[status.code] ?? 0);
    },
  });
  new client.Gauge({
    name: 'outbox_queue_oldest_age_seconds',
    help: 'Age of the oldest Queued mail since it was accepted, 0 when none is Queued.',
    registers: [registry],
    async collect() {
      const { oldestQueuedReceivedAt } = await mails.queueHealth();
      this.set(oldestQueuedReceivedAt === undefined ? 0 : Math.max(0, (clock.now() - oldestQueuedReceivedAt) / 1000));
    },
  });

  // The fleet from the heartbeats (docs/operations.md#instances-and-heartbeats): the same on every instance
  // sharing a store, like the mail figures. Alert on outbox_live_workers == 0 while outbox_mails{status="Queued"} > 0.
  new client.Gauge({
    name: 'outbox_live_workers',
    help: 'Instances with the worker role whose heartbeat is live (within INSTANCE_STALE_AFTER, 15 s by default).',
    registers: [registry],
    async collect() {
      this.set((await instances.countInstances()).liveWorkers);
    },
  });
  new client.Gauge({
    name: 'outbox_instances',
    help: 'Instances known from their heartbeats, by state: live, or stale (silent past INSTANCE_STALE_AFTER, forgotten after an hour).',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const { liveInstances, staleInstances } = await instances.countInstances();
      this.set({ state: 'live' }, liveInstances);
      this.set({ state: 'stale' }, staleInstances);
    },
  });

  // Alert rules (docs/alerts.md#metrics), read from the store at scrape time like the mail figures: the same on
  // every instance, whichever one evaluates. The counter survives restarts (alert_states.firings).
  if (alerts) {
    new client.Gauge({
      name: 'outbox_alert_state',
      help: 'Alert rules by state: 1 for the state each rule is in, 0 for the others (ok, pending, firing, resolved, inactive).',
      labelNames: ['rule', 'state'],
      registers: [registry],
      async collect() {
        for (const figure of await alerts.metricsFigures()) {
          for (const state of ALERT_STATES) this.set({ rule: figure.rule, state }, figure.state === state ? 1 : 0);
        }
      },
    });
    new client.Counter({
      name: 'outbox_alert_firings_total',
      help: 'Alert episodes that began firing, by rule, since the store was created.',
      labelNames: ['rule'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const figure of await alerts.metricsFigures()) this.inc({ rule: figure.rule }, figure.firings);
      },
    });
  }

  // Relay health (docs/relays.md#metrics), folded from the live workers' reports at scrape time: the same on every
  // instance. One read per scrape serves the five series (they are collected one after another).
  if (relayHealth) {
    let read: { at: number; relays: Promise<RelayHealth[]> } | undefined;
    const relays = (): Promise<RelayHealth[]> => {
      const now = Date.now();
      if (!read || now - read.at > 1000) read = { at: now, relays: relayHealth.listRelayHealth() };
      return read.relays;
    };
    const perRelay = (name: string, help: string, figure: (relay: RelayHealth) => number | null) =>
      new client.Gauge({
        name,
        help,
        labelNames: ['relay'],
        registers: [registry],
        async collect() {
          // Relays removed since the last scrape must not linger.
          this.reset();
          for (const relay of await relays()) {
            const value = figure(relay);
            if (value !== null) this.set({ relay: relay.relay }, value);
          }
        },
      });
    new client.Gauge({
      name: 'outbox_relay_state',
      help: 'Relays by state as the live workers report them (the worst of them): 1 for the state each relay is in, 0 for the others (up, throttled, down, idle).',
      labelNames: ['relay', 'state'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const relay of await relays())
          for (const state of RELAY_STATES) this.set({ relay: relay.relay, state }, relay.state === state ? 1 : 0);
      },
    });
    perRelay(
      'outbox_relay_rate_per_second',
      'The rate the live workers pace each relay at now, summed; absent while no worker paces it (no maxPerSecond, no throttling).',
      (relay) => relay.ratePerSecond,
    );
    perRelay('outbox_relay_sent_today', 'Messages each relay took this UTC day, summed over the live workers.', (relay) => relay.sentToday);
    perRelay(
      'outbox_relay_quota_used_ratio',
      'The largest share of its daily quota (maxPerDay, per worker process) any live worker used today; absent without a quota.',
      (relay) => relay.quotaUsed,
    );
    perRelay(
      'outbox_relay_latency_seconds',
      'Median time of the recent sends to each relay, handing the message over to the reply (the median of the live workers’ medians).',
      (relay) => (relay.latencyMs === null ? null : relay.latencyMs / 1000),
    );
  }

  // Failed and refused logins: a rising rate is an attack on the operators' passwords.
  const loginFailures = new client.Counter({
    name: 'outbox_login_failures_total',
    help: 'Failed logins by reason: invalid_credentials (401), pair_limit, client_limit or name_limit (429, refused before any check).',
    labelNames: ['reason'],
    registers: [registry],
  });
  const loginsSlowed = new client.Counter({
    name: 'outbox_logins_slowed_total',
    help: 'Login attempts made to wait because their name failed from many addresses (never refused for it).',
    registers: [registry],
  });
  for (const reason of LOGIN_FAILURE_REASONS) loginFailures.inc({ reason }, 0);

  return {
    contentType: registry.contentType,
    render: () => registry.metrics(),
    recordLoginFailure: (reason: LoginFailureReason) => loginFailures.inc({ reason }),
    recordLoginSlowed: () => loginsSlowed.inc(),
  };
}

export type MetricsService = ReturnType<typeof createMetricsService>;
