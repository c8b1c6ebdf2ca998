/**
 * The purges main.ts runs on the instances that deliver (an API-only instance leaves them to those): retention
 * hourly, content retention every minute.
 */
import type { AppServices } from '../app.js';
import { createAuditRetention } from '../audit/audit-retention.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { CONTENT_PURGE_INTERVAL_MS } from '../mail/content-retention.js';
import type { Store } from '../store/connection.js';

export interface RetentionJobs {
  /** No further run starts. */
  stop(): void;
  /** Resolves when the content purge under way (if any) is over: a stop waits for it before it closes the store. */
  idle(): Promise<unknown>;
}

export function startRetentionJobs(
  config: Config,
  parts: { store: Store; clock: Clock; services: AppServices; logger: Pick<Logger, 'info' | 'error'> },
): RetentionJobs {
  const { store, clock, services, logger: log } = parts;

  // Retention: finished and failed mails older than RETENTION_DAYS go, at start and then hourly. Expired sessions go
  // with them: a session past its expiry can never be used again, and nothing else would ever delete it. The hourly
  // statistics have their own 13 months.
  const auditRetention = createAuditRetention({ store, clock });
  const purge = () =>
    Promise.all([
      services.mails.purgeFinishedMails(config.retentionDays, 'retention').then(
        (purged) => purged > 0 && log.info({ purged, retentionDays: config.retentionDays }, 'purged finished mails past retention'),
        (error: unknown) => log.error({ err: error }, 'retention purge failed'),
      ),
      services.auth.purgeExpiredSessions().then(
        (purged) => purged > 0 && log.info({ purged }, 'purged expired sessions'),
        (error: unknown) => log.error({ err: error }, 'expired session purge failed'),
      ),
      auditRetention.purgeAuditLog(config.auditRetentionDays).then(
        (purged) =>
          purged > 0 && log.info({ purged, auditRetentionDays: config.auditRetentionDays }, 'purged audit entries past retention'),
        (error: unknown) => log.error({ err: error }, 'audit log purge failed'),
      ),
      services.bounces.purgeReports(config.retentionDays).then(
        (purged) => purged > 0 && log.info({ purged, retentionDays: config.retentionDays }, 'purged bounce reports past retention'),
        (error: unknown) => log.error({ err: error }, 'bounce report purge failed'),
      ),
      services.webhooks.purgeLog(config.retentionDays).then(
        (purged) =>
          purged.attempts + purged.deliveries > 0 &&
          log.info({ ...purged, retentionDays: config.retentionDays }, 'purged webhook log past retention'),
        (error: unknown) => log.error({ err: error }, 'webhook log purge failed'),
      ),
      // Statistics outlive the mails: 13 months, whatever RETENTION_DAYS says.
      services.statistics.purgeStatistics().then(
        (purged) => purged > 0 && log.info({ purged }, 'purged hourly statistics older than 13 months'),
        (error: unknown) => log.error({ err: error }, 'statistics purge failed'),
      ),
    ]);
  void purge();
  const retentionTimer = setInterval(() => void purge(), 3_600_000);
  retentionTimer.unref();

  // Content retention: every minute, so that a retention of 0 days removes a mail's content within a minute of its
  // outcome without a write on delivery's path; a run finds nothing to do in one index seek per application
  // (docs/operations.md#content-retention). One run at a time per process.
  let contentPurgeRun: Promise<unknown> | undefined;
  const purgeContent = () => {
    contentPurgeRun ??= services.contentRetention
      .purgeMailContents()
      .then(
        (removed) => removed > 0 && log.info({ removed }, 'removed the content of mails past content retention'),
        (error: unknown) => log.error({ err: error }, 'content purge failed'),
      )
      .finally(() => {
        contentPurgeRun = undefined;
      });
  };
  purgeContent();
  const contentPurgeTimer = setInterval(purgeContent, CONTENT_PURGE_INTERVAL_MS);
  contentPurgeTimer.unref();

  return {
    stop() {
      clearInterval(retentionTimer);
      clearInterval(contentPurgeTimer);
    },
    idle: () => Promise.resolve(contentPurgeRun),
  };
}
