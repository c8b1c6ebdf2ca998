/**
 * Several statuses in received order, read as one page per status and merged. Each status has its own
 * `(status, received_at, id)` index: walking each one meets that status's matches only, where one walk of
 * `(received_at, id)` reads every mail of every other status in between. At 1M mails, `q=shipped status=0,4`
 * read ~5,500 rows in one walk and ~1,500 in two.
 */
import type { DbOrTrx, Engine } from '../store/connection.js';
import type { MailRow } from '../store/schema.js';
import { listMailRows, type ListPageQuery } from './mail.repository.js';

/**
 * Whether k statuses holding `statusTotal` of `allTotal` mails are cheaper read apart: if a page's matches
 * are spread like the mails, k walks read about k × page / density rows, one walk page × all / statusTotal.
 */
export function isPerStatusCheaper(statusCount: number, statusTotal: number, allTotal: number): boolean {
  return statusCount > 1 && statusCount * statusTotal < allTotal;
}

/**
 * The page of `query` (received order, `query.statuses` more than one): each status's page read on its own
 * with the same cursor, then merged by (received_at, id), integers, so the merge orders exactly as SQL does.
 * Every status's page holds the limit's rows nearest the cursor (or one more: `hasMore`), so the merged
 * page's rows are the nearest of all. A bounded walk that ran out in any status runs out for the page.
 */
export async function listMailRowsPerStatus(
  db: DbOrTrx,
  engine: Engine,
  query: ListPageQuery & { statuses: number[] },
): Promise<{ rows: MailRow[]; hasMore: boolean; walkedOut: boolean; total?: number }> {
  const parts = await Promise.all(query.statuses.map((status) => listMailRows(db, engine, { ...query, statuses: [status] })));
  const sign = query.order === 'desc' ? -1 : 1;
  const rows = parts
    .flatMap((part) => part.rows)
    .sort((a, b) => sign * (Number(a.received_at) - Number(b.received_at) || Number(a.id) - Number(b.id)));
  const limit = query.limit ?? rows.length;
  // Backwards (a `prev` cursor), the page is the rows just before the cursor: the end of the display order.
  const page = query.cursor?.direction === 'prev' ? rows.slice(Math.max(0, rows.length - limit)) : rows.slice(0, limit);
  return {
    rows: page,
    hasMore: rows.length > limit || parts.some((part) => part.hasMore),
    walkedOut: parts.some((part) => part.walkedOut),
  };
}
