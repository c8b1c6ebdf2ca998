/** How long mails, their content and the audit log are kept. */
import type { EnvReader } from './env-reader.js';

export interface RetentionSettings {
  retentionDays: number;
  /**
   * CONTENT_RETENTION_DAYS: days a final mail's content (raw message, bodies, attachments) is kept, 0 to RETENTION_DAYS
   * (its default: the content goes with the record); 0 removes it once the mail is final (docs/operations.md#content-retention).
   * An application may have its own (`apikey content-retention`).
   */
  contentRetentionDays: number;
  /** Audit log entries older than this many days are purged with the mails (AUDIT_RETENTION_DAYS). */
  auditRetentionDays: number;
}

export function readRetentionSettings({ env, problems, integer }: EnvReader): RetentionSettings {
  const retentionDays = integer('RETENTION_DAYS', 30, 1, 36500);
  // Its default is RETENTION_DAYS.
  let contentRetentionDays = integer('CONTENT_RETENTION_DAYS', -1, 0, 36500);
  const auditRetentionDays = integer('AUDIT_RETENTION_DAYS', 365, 1, 36500);
  if (contentRetentionDays === -1) contentRetentionDays = retentionDays;
  else if (contentRetentionDays > retentionDays) {
    // Refused rather than capped: the record, and its content with it, is deleted at RETENTION_DAYS.
    problems.push(
      `CONTENT_RETENTION_DAYS must be at most RETENTION_DAYS (${retentionDays}): a mail's content is deleted with its record at RETENTION_DAYS, got "${env.CONTENT_RETENTION_DAYS}"`,
    );
    contentRetentionDays = retentionDays;
  }
  return { retentionDays, contentRetentionDays, auditRetentionDays };
}
