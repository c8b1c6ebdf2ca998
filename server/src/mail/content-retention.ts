/**
 * Content retention (docs/operations.md#content-retention): a final mail's raw message, bodies and
 * attachments go after CONTENT_RETENTION_DAYS, or after its application's own number of days, while its record
 * (sender, recipients, subject, status, dates, attempts, events) stays until RETENTION_DAYS. The purge runs every
 * minute on the instances that deliver (main.ts), so that 0 means "within a minute of the outcome" without putting
 * anything on delivery's path. A retention that reaches RETENTION_DAYS has nothing to do here: the record's purge
 * takes the content with it, so the default setting costs no write at all.
 */
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { AppError, badRequest, notFound } from '../errors.js';
import type { Store } from '../store/connection.js';
import * as repo from './content-retention.repository.js';
import { removeMailContents } from './write/content.js';

/** Mails per transaction of the purge: short transactions, so delivery's commits are never held up for long. */
export const CONTENT_PURGE_BATCH = 500;
/** Applications per read of the purge (one IN list). */
const KEYS_PER_READ = 500;
/** How often main.ts runs the purge: the delay a retention of 0 days has after a mail's outcome. */
export const CONTENT_PURGE_INTERVAL_MS = 60_000;

/** An application's content retention as the API and the command line show it. */
export interface ApplicationContentRetention {
  id: number;
  name: string;
  /** Its own number of days, or null: CONTENT_RETENTION_DAYS applies. */
  contentRetentionDays: number | null;
  /** What applies to its mails: its own days or the default, at most RETENTION_DAYS. */
  effectiveContentRetentionDays: number;
}

export interface ContentRetentionDeps {
  store: Store;
  clock: Clock;
  /** CONTENT_RETENTION_DAYS. */
  defaultDays: number;
  /** RETENTION_DAYS: the record, and any content left, goes then. */
  retentionDays: number;
}

export type ApplicationKey = { id: number } | { name: string };

export function createContentRetention({ store, clock, defaultDays, retentionDays }: ContentRetentionDeps) {
  const { db } = store;
  const effectiveDays = (own: number | null) => Math.min(own ?? defaultDays, retentionDays);
  const describe = (key: ApplicationKey) => ('id' in key ? `No API key has id ${key.id}.` : `No API key is named "${key.name}".`);
  const view = (row: repo.ApplicationContentRetentionRow): ApplicationContentRetention => ({
    id: row.id,
    name: row.name,
    contentRetentionDays: row.content_retention_days,
    effectiveContentRetentionDays: effectiveDays(row.content_retention_days),
  });

  async function getApplicationContentRetention(key: ApplicationKey): Promise<ApplicationContentRetention> {
    const row = await repo.findApplicationContentRetention(db, key);
    if (!row) throw notFound('api_key_not_found', describe(key));
    return view(row);
  }

  /**
   * Sets an application's own content retention (0 to RETENTION_DAYS days) or, with null, returns it to
   * CONTENT_RETENTION_DAYS; the audit log records the change. A shorter retention applies at the next purge,
   * to the mails already stored too; a longer one cannot bring back content already removed.
   */
  async function setApplicationContentRetention(
    key: ApplicationKey,
    days: number | null,
    actor: string,
  ): Promise<ApplicationContentRetention> {
    if (days !== null && (!Number.isInteger(days) || days < 0 || days > retentionDays)) {
      throw badRequest(
        'invalid_content_retention',
        `contentRetentionDays must be a whole number of days from 0 to ${retentionDays} (RETENTION_DAYS, when the whole mail goes), or null for the default (CONTENT_RETENTION_DAYS, ${defaultDays}); got ${String(days)}.`,
      );
    }
    return db.transaction().execute(async (trx) => {
      const before = await repo.findApplicationContentRetention(trx, key);
      const row = before && (await repo.updateApplicationContentRetention(trx, { id: before.id }, days));
      if (!before || !row) throw notFound('api_key_not_found', describe(key));
      await insertAuditEntries(trx, [
        {
          at: clock.now(),
          actor,
          action: 'apikey.content-retention',
          target: `apikey:${row.name}`,
          before: { contentRetentionDays: before.content_retention_days },
          after: {
            contentRetentionDays: row.content_retention_days,
            effectiveContentRetentionDays: effectiveDays(row.content_retention_days),
          },
        },
      ]);
      return view(row);
    });
  }

  /**
   * Removes the content of every final mail past its application's retention, in transactions of
   * CONTENT_PURGE_BATCH mails, and answers how many lost it. Applications are grouped by the days that apply to
   * them; a group at RETENTION_DAYS is left to the record's purge. One audit entry per run that removed anything.
   */
  async function purgeMailContents(actor = 'retention'): Promise<number> {
    const now = clock.now();
    const groups = new Map<number, number[]>();
    for (const row of await repo.listApplicationContentRetention(db)) {
      const days = effectiveDays(row.content_retention_days);
      const group = groups.get(days);
      if (group) group.push(row.id);
      else groups.set(days, [row.id]);
    }
    const removedByDays: Record<string, number> = {};
    let removed = 0;
    const drain = async (owners: number[] | null, days: number) => {
      const before = now - days * 86_400_000;
      for (;;) {
        const ids = await repo.listContentDue(db, owners, before, CONTENT_PURGE_BATCH);
        if (ids.length === 0) return;
        const done = await db.transaction().execute((trx) => removeMailContents(trx, ids, now));
        removed += done.length;
        removedByDays[days] = (removedByDays[days] ?? 0) + done.length;
        if (ids.length < CONTENT_PURGE_BATCH) return;
      }
    };
    const defaultEffective = effectiveDays(null);
    if (defaultEffective < retentionDays) await drain(null, defaultEffective);
    for (const [days, keys] of groups) {
      if (days >= retentionDays) continue;
      for (let start = 0; start < keys.length; start += KEYS_PER_READ) await drain(keys.slice(start, start + KEYS_PER_READ), days);
    }
    if (removed > 0) {
      await insertAuditEntries(db, [
        {
          at: now,
          actor,
          action: 'mail.content.purge',
          target: `${removed} mails`,
          before: { contentRetentionDays: defaultDays, retentionDays },
          after: { removedByContentRetentionDays: removedByDays },
        },
      ]);
    }
    return removed;
  }

  return { getApplicationContentRetention, setApplicationContentRetention, purgeMailContents };
}

export type ContentRetention = ReturnType<typeof createContentRetention>;

/** 410 content_removed: what a read of a removed message answers (the raw .eml). */
export function contentRemoved(id: number, removedAt: number, what: string): AppError {
  return new AppError(
    410,
    'content_removed',
    `Mail ${id}'s content was removed on ${new Date(removedAt).toISOString()} by content retention (CONTENT_RETENTION_DAYS or its application's own): ${what}`,
  );
}
