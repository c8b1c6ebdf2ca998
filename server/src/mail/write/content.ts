/**
 * Content retention's write (docs/operations.md#content-retention): a final mail loses its raw message, bodies and
 * attachments and keeps its record, recipients and events. Part of the single writer (apply.ts), since it writes
 * `mails.content_removed_at`; no status moves, so no event and no counter.
 */
import { CONTENT_RETENTION_STATUSES } from '@outbox/contract';
import type { DbOrTrx } from '../../store/connection.js';
import { CHUNK } from './columns.js';

/**
 * Removes the content of those of `ids` that are final and still hold it, in the caller's transaction, and answers
 * their ids. The record's UPDATE is conditional on both (a requeue's is conditional on the content being there:
 * exactly one of the two wins a race); `mail_contents` keeps its row with the envelope sender and the size, which
 * are the mail's metadata.
 */
export async function removeMailContents(db: DbOrTrx, ids: readonly number[], at: number): Promise<number[]> {
  const removed: number[] = [];
  for (let start = 0; start < ids.length; start += CHUNK) {
    const chunk = ids.slice(start, start + CHUNK);
    const rows = await db
      .updateTable('mails')
      .set({ content_removed_at: at })
      .where('id', 'in', chunk)
      .where('status', 'in', [...CONTENT_RETENTION_STATUSES])
      .where('content_removed_at', 'is', null)
      .returning('id')
      .execute();
    if (rows.length === 0) continue;
    const done = rows.map((row) => Number(row.id));
    await db
      .updateTable('mail_contents')
      .set({ raw: null, text_body: null, html_body: null, headers_json: null })
      .where('mail_id', 'in', done)
      .execute();
    removed.push(...done);
  }
  return removed;
}
