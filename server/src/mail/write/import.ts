/**
 * The import's way in (store/transfer.ts, `npm run outbox -- import`): exported mails and queue rows go in as they
 * were, ids and history kept, but only through this checked path. Part of the single writer (apply.ts).
 */
import { isStatusCode, MailStatus } from '@outbox/contract';
import { type DbOrTrx } from '../../store/connection.js';
import { punctuationWindowsOf } from '../../store/punctuation-keys.js';
import { engineOf } from '../../store/statement-batch.js';
import type { MailRow } from '../../store/schema.js';
import { rebuildStatusCounts } from './counters.js';

/**
 * The import's way in (store/transfer.ts, `npm run outbox -- import`): exported mail rows go in as they were,
 * ids and history kept, but only through this checked path: each row's status must be one of the six, and
 * the counters are rebuilt from the rows afterwards (`rebuildStatusCounts`), in the import's transaction.
 */
export async function insertImportedMails(db: DbOrTrx, rows: ReadonlyArray<Record<string, unknown>>): Promise<void> {
  for (const row of rows) {
    if (typeof row.status !== 'number' || !isStatusCode(row.status))
      throw new RangeError(`mail ${String(row.id)}: status ${JSON.stringify(row.status)} is not one of the six statuses (0-5)`);
  }
  // An export from before migration 017 may hold a change dated before its receipt: moved to the receipt. One from
  // before migration 022 has no queue of its own: its Queued and Processing mails get their queue rows here, a
  // Processing one with the lease it held (it shows Processing until the lease runs out, as it would have there).
  const clamped: Array<Record<string, unknown>> = rows.map(({ lease_owner: _owner, lease_expires_at: _expires, ...row }) => ({
    ...row,
    ...(typeof row.last_update_at === 'number' && typeof row.received_at === 'number' && row.last_update_at < row.received_at
      ? { last_update_at: row.received_at }
      : {}),
    ...(row.status === MailStatus.Processing ? { status: MailStatus.Queued } : {}),
  }));
  if (clamped.length === 0) return;
  await db
    .insertInto('mails')
    .values(clamped as unknown as MailRow[])
    .execute();
  const beforeTheQueue = rows.filter(
    (row) => 'lease_owner' in row && (row.status === MailStatus.Queued || row.status === MailStatus.Processing),
  );
  if (beforeTheQueue.length > 0)
    await insertImportedQueueRows(
      db,
      beforeTheQueue.map((row) => {
        const leased = row.status === MailStatus.Processing;
        return {
          mail_id: row.id,
          due_at: row.next_attempt_at,
          attempts: row.attempts,
          lease_owner: leased ? (row.lease_owner ?? '') : null,
          lease_expires_at: leased ? (row.lease_expires_at ?? 0) : null,
          leased_at: leased ? row.last_update_at : null,
          api_key_id: row.api_key_id ?? 0,
          lane: row.lane ?? 0,
        };
      }),
    );
  if (engineOf(db) === 'postgres')
    await db
      .insertInto('mail_search')
      .values(
        clamped.map((row) => {
          const text = String(row.search_text ?? '');
          return { mail_id: Number(row.id), search_text: text, keys: punctuationWindowsOf(text) };
        }),
      )
      .execute();
}

/** The import's queue rows (an export's `mail_queue`), checked: each names a mail imported before it. */
async function insertImportedQueueRows(db: DbOrTrx, rows: ReadonlyArray<Record<string, unknown>>): Promise<void> {
  if (rows.length === 0) return;
  const num = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  await db
    .insertInto('mail_queue')
    .values(
      rows.map((row) => ({
        mail_id: Number(row.mail_id),
        due_at: Number(row.due_at ?? 0),
        attempts: Number(row.attempts ?? 0),
        lease_owner: row.lease_owner === null || row.lease_owner === undefined ? null : String(row.lease_owner),
        lease_expires_at: num(row.lease_expires_at),
        leased_at: num(row.leased_at),
        api_key_id: num(row.api_key_id) ?? 0,
        // An export made before migration 027 names the lane `priority`.
        lane: Number(row.lane ?? row.priority ?? 0),
      })),
    )
    .execute();
}

/** What store/transfer.ts's import writes mails, the queue and counters with (it may import nothing of mail/ itself). */
export const mailImportWriter = { insertMails: insertImportedMails, insertQueueRows: insertImportedQueueRows, rebuildStatusCounts };
