/**
 * The mail list's sorts (docs/query-plans.md): each sort's column, the check of a cursor's value for it and the
 * two indexes its pages walk. The list cursor (list-cursor.ts) and the page reads (list.repository.ts) take a
 * sort's facts from here.
 */
import type { MailSort } from '@outbox/contract';
import { isText, isWholeNumber, type CursorCheck } from './cursor.js';

export type SortValue = number | string;

/**
 * Every sort: its column, the check of a cursor's value for it, whether it is text (PostgreSQL hides a text
 * column from its indexes differently), and the two indexes its pages walk: `(column, id)` and, for a status
 * filter, `(status, column, id)`. Migrations 001–004 and 014 create them.
 */
export const LIST_SORTS = {
  receivedDate: {
    column: 'received_at',
    value: isWholeNumber(0),
    text: false,
    index: 'mails_received_idx',
    statusIndex: 'mails_status_received_idx',
  },
  lastUpdate: {
    column: 'last_update_at',
    value: isWholeNumber(0),
    text: false,
    index: 'mails_last_update_idx',
    statusIndex: 'mails_status_last_update_idx',
  },
  providerSentDate: {
    column: 'provider_sent_at',
    value: isWholeNumber(0),
    text: false,
    index: 'mails_provider_sent_idx',
    statusIndex: 'mails_status_provider_sent_idx',
  },
  subject: { column: 'subject', value: isText, text: true, index: 'mails_subject_idx', statusIndex: 'mails_status_subject_idx' },
  status: { column: 'status', value: isWholeNumber(0, 5), text: false, index: 'mails_status_idx', statusIndex: 'mails_status_idx' },
  from: { column: 'from_mail', value: isText, text: true, index: 'mails_from_idx', statusIndex: 'mails_status_from_idx' },
  to: { column: 'first_to_mail', value: isText, text: true, index: 'mails_first_to_idx', statusIndex: 'mails_status_first_to_idx' },
} as const satisfies Record<MailSort, { column: string; value: CursorCheck; text: boolean; index: string; statusIndex: string }>;

export type SortColumn = (typeof LIST_SORTS)[MailSort]['column'];

/** A row's place in a sort: its value, then its id (ids break ties). */
export interface Position {
  value: SortValue;
  id: number;
}
