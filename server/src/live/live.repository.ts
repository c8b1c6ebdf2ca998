/** The live hub's reads: the current state of the mails that changed, and the status counters. */
import { withLeases } from '../mail/leases.js';
import type { DbOrTrx } from '../store/connection.js';

export { getStatusCounts } from '../mail/mail.repository.js';

export interface MailStateRow {
  id: number;
  status: number;
  last_update_at: number;
  provider_sent_at: number;
  received_at: number;
}

/** One indexed read by primary key, as they show (a leased mail is Processing: mail/leases.ts); ids that are gone are left out. */
export async function findMailStates(db: DbOrTrx, ids: readonly number[]): Promise<MailStateRow[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('mails')
    .select(['id', 'status', 'last_update_at', 'provider_sent_at', 'received_at', 'attempts'])
    .where('id', 'in', [...ids])
    .execute();
  return (await withLeases(db, rows)).map(({ id, status, last_update_at, provider_sent_at, received_at }) => ({
    id,
    status,
    last_update_at,
    provider_sent_at,
    received_at,
  }));
}
