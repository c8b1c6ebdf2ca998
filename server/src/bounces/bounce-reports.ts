/**
 * The operators' side of bounce reports (docs/api.md#bounces-get-apiv1bounces): list them (all, matched or not, or a mail's),
 * read one and its raw bytes, and purge them by age. Pages are keyset (received_at, id), so a deep page costs what
 * the first does.
 */
import { MAIL_DETAIL_BOUNCES, type BounceReport, type BounceSummary, type BouncesResponse } from '@outbox/contract';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import type { Store } from '../store/connection.js';
import * as repo from './bounce.repository.js';

export function createBounceReports({ store, clock }: { store: Store; clock: Clock }) {
  function toReport(row: repo.BounceReportSummaryRow): BounceReport {
    return {
      id: row.id,
      receivedAt: new Date(Number(row.received_at)).toISOString(),
      envelopeFrom: row.envelope_from,
      envelopeTo: row.envelope_to,
      kind: row.kind as BounceReport['kind'],
      mailId: row.mail_id,
      matchedBy: row.matched_by as BounceReport['matchedBy'],
      size: row.size,
      summary: JSON.parse(row.summary) as BounceSummary,
    };
  }

  function encodeCursor(row: repo.BounceReportSummaryRow): string {
    return `${row.received_at}.${row.id}`;
  }

  function decodeCursor(cursor: string): { receivedAt: number; id: number } {
    const match = /^(0|[1-9][0-9]{0,15})\.([1-9][0-9]{0,15})$/.exec(cursor);
    if (!match) throw badRequest('invalid_cursor', 'query.cursor is not a cursor this endpoint gave out (meta.nextCursor).');
    return { receivedAt: Number(match[1]), id: Number(match[2]) };
  }

  async function listReports(query: {
    matched?: 'true' | 'false' | undefined;
    limit?: number | undefined;
    cursor?: string | undefined;
  }): Promise<BouncesResponse> {
    const limit = query.limit ?? 100;
    const rows = await repo.listBounceReports(store.db, {
      matched: query.matched === undefined ? undefined : query.matched === 'true',
      limit: limit + 1,
      before: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
    });
    const hasMore = rows.length > limit;
    const page = rows.slice(0, limit);
    return { data: page.map(toReport), meta: { nextCursor: hasMore ? encodeCursor(page.at(-1)!) : null } };
  }

  /**
   * RETENTION_DAYS (and `purge --older-than`): reports received before then go, matched or not, in batches of
   * 1,000 so no transaction holds the store for long. A mail's own reports go with it anyway (migration 021).
   */
  async function purgeReports(olderThanDays: number): Promise<number> {
    const before = clock.now() - olderThanDays * 86_400_000;
    let purged = 0;
    for (;;) {
      const deleted = await repo.deleteBounceReportsBefore(store.db, before, 1000);
      purged += deleted;
      if (deleted < 1000) return purged;
    }
  }

  async function getRaw(id: number): Promise<Buffer> {
    const row = await repo.findBounceReport(store.db, id);
    if (!row) throw notFound('bounce_not_found', `No bounce report has id ${id}.`);
    return row.raw;
  }

  async function getReport(id: number): Promise<BounceReport> {
    const row = await repo.findBounceReport(store.db, id);
    if (!row) throw notFound('bounce_not_found', `No bounce report has id ${id}.`);
    const { raw, ...rest } = row;
    return toReport({ ...rest, size: raw.length });
  }

  /** One page of a mail's reports, oldest first (keyset on received_at, id): the detail's and `…/{id}/bounces`. */
  async function listMailReports(
    mailId: number,
    query: { limit?: number | undefined; cursor?: string | undefined } = {},
  ): Promise<BouncesResponse> {
    const limit = query.limit ?? MAIL_DETAIL_BOUNCES;
    const rows = await repo.listMailBounceReports(store.db, mailId, {
      limit: limit + 1,
      after: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
    });
    const page = rows.slice(0, limit);
    return { data: page.map(toReport), meta: { nextCursor: rows.length > limit ? encodeCursor(page.at(-1)!) : null } };
  }

  return { listReports, purgeReports, getReport, getRaw, listMailReports };
}
