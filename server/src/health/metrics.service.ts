/**
 * `GET /metrics` in the Prometheus text format (PRODUCT.md §2): the queue as the store holds it (mails per
 * status, age of the oldest Queued mail) read at scrape time, plus this process's own figures from
 * prom-client's default collectors. Store figures are the same on every instance sharing a database, so a
 * dashboard takes them from any one instance.
 */
import client from 'prom-client';
import { STATUSES } from '@outbox/contract';
import type { Clock } from '../clock.js';
import type { MailService } from '../mail/mail.service.js';

export function createMetricsService({ mails, clock }: { mails: MailService; clock: Clock }) {
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

  return {
    contentType: registry.contentType,
    render: () => registry.metrics(),
  };
}

export type MetricsService = ReturnType<typeof createMetricsService>;
