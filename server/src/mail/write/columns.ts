/** What the writer's statements share: the record's columns and the rows per statement. */
import type { MailRow } from '../../store/schema.js';

/** Every column of a mail row, for RETURNING; the check below fails to compile when one is missing. */
export const MAIL_COLUMNS = [
  'id',
  'message_id',
  'from_name',
  'from_mail',
  'subject',
  'status',
  'search_text',
  'received_at',
  'last_update_at',
  'provider_sent_at',
  'next_attempt_at',
  'attempts',
  'provider_reply',
  'api_key_id',
  'idempotency_key',
  'first_to_mail',
  'recipient_count',
  'rejected_recipients',
  'event_seq',
  'send_at',
  'lane',
  'content_removed_at',
] as const satisfies ReadonlyArray<keyof MailRow>;

const hasEveryColumn: Exclude<keyof MailRow, (typeof MAIL_COLUMNS)[number]> extends never ? true : never = true;
void hasEveryColumn;

/** Rows per statement: bounded so that no statement exceeds either engine's bound-parameter limit. */
export const CHUNK = 500;

export const EVENT_COLUMNS = ['id', 'event_seq', 'message_id', 'subject', 'idempotency_key', 'api_key_id', 'received_at'] as const;
