import type { AlertRuleStatus, Instance, Mail, MailListResponse, QueueHealth, Relay, RelayHealth, Route } from '@outbox/contract';

let nextId = 1;

export function buildMail(overrides: Partial<Mail> = {}): Mail {
  const id = overrides.id ?? nextId++;
  return {
    id,
    fromName: `Sender ${id}`,
    fromMail: `sender${id}@example.com`,
    to: [{ recipientName: `Recipient ${id}`, recipientMail: `recipient${id}@example.org` }],
    subject: `Subject ${id}`,
    status: 3,
    providerSentDate: '2026-11-23T13:05:09.000Z',
    receivedDate: '2026-11-23T13:00:00.000Z',
    lastUpdate: '2026-11-23T13:05:10.000Z',
    ...overrides,
  };
}

export function buildMailList(mails: Mail[], meta: Partial<MailListResponse['meta']> = {}): MailListResponse {
  return {
    data: mails,
    meta: {
      total: mails.length,
      totalIsLowerBound: false,
      totalIsEstimate: false,
      nextCursor: null,
      prevCursor: null,
      counts: {},
      ...meta,
    },
  };
}

export function buildQueueHealth(overrides: Partial<QueueHealth> = {}): QueueHealth {
  return {
    at: '2026-11-23T13:10:00.000Z',
    queued: 0,
    dueNow: 0,
    oldestQueuedAt: null,
    oldestQueuedAgeSeconds: null,
    inFlight: 0,
    deliveredLastMinute: 0,
    deliveredLastHour: 0,
    failedLastHour: 0,
    failureRateLastHour: null,
    lastWorkerActivityAt: null,
    hasLiveWorker: false,
    workerActiveLastMinute: false,
    liveWorkers: 0,
    ...overrides,
  };
}

export function buildInstance(overrides: Partial<Instance> = {}): Instance {
  return {
    id: '3f9a0c1d2e4b5a67',
    host: 'mail-1',
    pid: 4242,
    version: '0.3.0',
    roles: ['api', 'worker', 'smtp'],
    startedAt: '2026-11-23T12:10:00.000Z',
    lastHeartbeatAt: '2026-11-23T13:09:58.000Z',
    heartbeatAgeSeconds: 2,
    staleAfterSeconds: 15,
    state: 'live',
    inFlight: 3,
    deliveredLastMinute: 120,
    ...overrides,
  };
}

export function buildRelay(overrides: Partial<Relay> = {}): Relay {
  return {
    id: 1,
    name: 'sendgrid-eu',
    url: 'smtp://smtp.eu.example:587',
    tls: 'require',
    hasCredentials: true,
    maxConnections: 5,
    maxPerSecond: 50,
    maxPerDay: 100_000,
    createdAt: '2026-11-23T10:00:00.000Z',
    updatedAt: '2026-11-23T10:00:00.000Z',
    ...overrides,
  };
}

export function buildRelayHealth(overrides: Partial<RelayHealth> = {}): RelayHealth {
  return {
    relay: 'sendgrid-eu',
    state: 'up',
    since: '2026-11-23T12:00:00.000Z',
    ratePerSecond: 12.5,
    maxPerSecond: 50,
    sentToday: 1234,
    maxPerDay: 100_000,
    quotaUsed: 0.012,
    lastError: null,
    lastErrorAt: null,
    latencyMs: 85,
    workers: 2,
    ...overrides,
  };
}

export function buildRoute(overrides: Partial<Route> = {}): Route {
  return {
    id: 1,
    position: 0,
    match: { application: null, senderDomain: null, recipientDomain: null, lane: null },
    relays: ['sendgrid-eu', 'default'],
    ...overrides,
  };
}

export function buildAlertRule(overrides: Partial<AlertRuleStatus> = {}): AlertRuleStatus {
  return {
    rule: 'failure_rate',
    title: 'Delivery failure rate',
    state: 'ok',
    since: null,
    value: null,
    threshold: 0.2,
    unit: 'ratio',
    summary: 'No delivery attempts in the last 15 min',
    lastEvaluatedAt: '2026-11-23T10:00:00.000Z',
    ...overrides,
  };
}
