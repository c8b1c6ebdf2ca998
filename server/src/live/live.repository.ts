/** The live hub's reads: the current state of the mails that changed, and the status counters. */
import type { DbOrTrx } from '../store/connection.js';

export { getStatusCounts } from '../mail/mail.repository.js';

export interface MailStateRow {
  id: number;
  status: number;
  last_update_at: number;
  provider_sent_at: number;
  received_at: number;
}

/** One indexed read by primary key; ids that are gone are left out. */
export function findMailStates(db: DbOrTrx, ids: readonly number[]): Promise<MailStateRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('mails')
    .select(['id', 'status', 'last_update_at', 'provider_sent_at', 'received_at'])
    .where('id', 'in', [...ids])
    .execute() as Promise<MailStateRow[]>;
}
