/**
 * How a mail comes into being: its record, queue row (when Queued), recipients, content, event, application event
 * and counter move, in the caller's transaction. The only way a mail is created, so no caller can store a status the
 * counters do not know. Part of the single writer (apply.ts).
 */
import { sql } from 'kysely';
import { isStatusCode, MailStatus } from '@outbox/contract';
import { applicationEventData, applicationEventTypeOf } from '../../events/application-event-data.js';
import { newEventId } from '../../events/application-events.repository.js';
import { type DbOrTrx } from '../../store/connection.js';
import { punctuationWindowsOf } from '../../store/punctuation-keys.js';
import { insertRows } from '../../store/row-insert.js';
import { createStatementBatch, engineOf } from '../../store/statement-batch.js';
import type { NewApplicationEventRow, NewMailRecipientRow } from '../../store/schema.js';
import { envelopeRecipientCount, searchTextOf, type NewMail } from '../mail.repository.js';
import type { ApplyOptions, CreatedTransition, MailCreation } from '../transition-types.js';
import { apply, type CreatedMail } from './apply.js';

/** A new mail: its row (the status is the creation's), its recipients and content. */
export interface MailToInsert extends NewMail {
  created: MailCreation;
  /**
   * Envelope addresses (lower-cased) on the suppression list, with why: stored with outcome `suppressed`, never
   * sent to, and told by a `mail.suppressed` application event after the creation's (suppression/README).
   */
  suppressed?: ReadonlyMap<string, string> | undefined;
}

/**
 * Inserts mails with their recipients and content, and applies their creation (status `created.to`, its
 * event, its application event and the counter move) in the caller's transaction; returns the new ids in
 * order. The only way a mail comes into being, so no caller can store a status the counters do not know.
 * `applicationEvents: false`: the demo data's mails, which are no application's.
 */
export async function insertMails(db: DbOrTrx, mails: readonly MailToInsert[], options: ApplyOptions = {}): Promise<number[]> {
  for (const m of mails) if (!isStatusCode(m.created.to)) throw new RangeError(`insertMails: ${String(m.created.to)} is no status`);
  // Processing is a lease (mail/leases.ts), taken by a claim of a Queued mail, never stored.
  if (mails.some((m) => m.created.to === MailStatus.Processing)) throw new RangeError('insertMails: a mail becomes Processing by a claim');
  const withEvents = options.applicationEvents !== false;
  // On PostgreSQL every write below joins one statement (a round trip) per group; the ids are drawn first, for
  // the whole group in one more round trip.
  const writes = createStatementBatch(db);
  const drawn =
    engineOf(db) === 'postgres'
      ? await drawMailIds(
          db,
          mails.map((m) => m.row.api_key_id ?? null),
          withEvents,
        )
      : undefined;
  const ids: number[] = [];
  const created = new Map<number, CreatedMail>();
  const suppressedEvents: NewApplicationEventRow[] = [];
  for (let start = 0; start < mails.length; start += 200) {
    const chunk = mails.slice(start, start + 200);
    const hasEvent = chunk.map(
      (m) => withEvents && m.created.event !== null && applicationEventTypeOf({ id: 0, from: null, ...m.created }) !== null,
    );
    const hasSuppressed = chunk.map((m) => withEvents && (m.suppressed?.size ?? 0) > 0);
    // The search's and the To sort's columns are derived here, so no caller can forget them or get them wrong.
    const rows = chunk.map((m, i) => ({
      recipient_count: envelopeRecipientCount(m.recipients),
      ...m.row,
      last_update_at: Math.max(m.row.last_update_at, m.row.received_at),
      status: m.created.to,
      event_seq: (hasEvent[i] ? 1 : 0) + (hasSuppressed[i] ? 1 : 0),
      search_text: searchTextOf(m.row, m.recipients),
      first_to_mail: m.recipients.find((r) => r.kind === 'to')?.address ?? '',
    }));
    let inserted: Array<{ id: number; application_name: string | null }>;
    if (drawn) {
      inserted = drawn.slice(start, start + 200);
      await writes.add(
        insertRows(
          db,
          'mails',
          rows.map((row, i) => ({ ...row, id: inserted[i]!.id })),
        ),
      );
      // PostgreSQL's search table with its trigram indexes (migration 031), written once with the mail.
      await writes.add(
        insertRows(
          db,
          'mail_search',
          rows.map((row, i) => ({ mail_id: inserted[i]!.id, search_text: row.search_text, keys: punctuationWindowsOf(row.search_text) })),
        ),
      );
    } else {
      // The key's name for the events (a primary-key subquery); the demo data, writing none, skips it.
      const returning = `id, ${withEvents ? '(select name from api_keys where api_keys.id = mails.api_key_id)' : 'null'} as application_name`;
      ({ rows: inserted } = await db.executeQuery<{ id: number; application_name: string | null }>(
        insertRows(db, 'mails', rows, returning).compile(),
      ));
      // RETURNING follows VALUES order on SQLite for a single multi-row INSERT.
    }
    ids.push(...inserted.map((r) => r.id));
    // A mail created Queued waits in the queue (migration 022) from its first instant.
    const waiting = chunk.flatMap((m, i) =>
      m.created.to === MailStatus.Queued
        ? [
            {
              mail_id: inserted[i]!.id,
              due_at: rows[i]!.next_attempt_at,
              attempts: rows[i]!.attempts ?? 0,
              api_key_id: m.row.api_key_id ?? 0,
              lane: m.row.lane ?? 0,
            },
          ]
        : [],
    );
    if (waiting.length > 0) await writes.add(insertRows(db, 'mail_queue', waiting));
    const suppressionOf = (m: MailToInsert, address: string) => m.suppressed?.get(address.toLowerCase());
    chunk.forEach((m, i) => {
      if (!hasEvent[i] && !hasSuppressed[i]) return;
      const id = inserted[i]!.id;
      const envelope = m.recipients.filter((r) => r.kind === 'envelope');
      const entry: CreatedMail = {
        mail: {
          id,
          messageId: m.row.message_id,
          subject: m.row.subject,
          idempotencyKey: m.row.idempotency_key ?? null,
          apiKeyId: m.row.api_key_id ?? null,
          application: inserted[i]!.application_name ?? null,
          sequence: 1,
          receivedAt: m.row.received_at,
        },
        recipients: envelope.map((r) => {
          const why = suppressionOf(m, r.address);
          return { address: r.address, outcome: why === undefined ? 'pending' : 'suppressed', reply: why ?? null };
        }),
      };
      // A mail whose only event is mail.suppressed is there too: the statistics count it accepted (apply.ts).
      created.set(id, entry);
      if (hasSuppressed[i]) {
        const t: CreatedTransition = { id, from: null, ...m.created };
        const mail = { ...entry.mail, sequence: hasEvent[i] ? 2 : 1 };
        suppressedEvents.push({
          id: newEventId(),
          type: 'mail.suppressed',
          mail_id: id,
          mail_seq: mail.sequence,
          api_key_id: mail.apiKeyId,
          created_at: m.created.at,
          payload: JSON.stringify(applicationEventData('mail.suppressed', t, null, mail, entry.recipients)),
        });
      }
    });
    const recipients = chunk.flatMap((m, i) =>
      m.recipients.map((r, position): NewMailRecipientRow => ({
        mail_id: inserted[i]!.id,
        kind: r.kind,
        position,
        name: r.name,
        address: r.address,
        // Envelope rows are the ones delivered to: each starts pending (store/migrations/005-recipient-outcomes.ts),
        // or suppressed, which the worker never sends to.
        outcome: r.kind !== 'envelope' ? null : suppressionOf(m, r.address) === undefined ? 'pending' : 'suppressed',
        reply: r.kind === 'envelope' ? (suppressionOf(m, r.address) ?? null) : null,
      })),
    );
    for (let r = 0; r < recipients.length; r += 500) {
      await writes.add(insertRows(db, 'mail_recipients', recipients.slice(r, r + 500)));
    }
    const contents = chunk.flatMap((m, i) =>
      m.content
        ? [
            {
              mail_id: inserted[i]!.id,
              raw: m.content.raw,
              text_body: m.content.textBody,
              html_body: m.content.htmlBody,
              headers_json: m.content.headersJson,
              envelope_from: m.content.envelopeFrom,
              size_bytes: m.content.sizeBytes,
            },
          ]
        : [],
    );
    if (contents.length > 0) await writes.add(insertRows(db, 'mail_contents', contents));
  }
  const transitions: CreatedTransition[] = mails.map((m, i) => ({ id: ids[i]!, from: null, ...m.created }));
  // A mail.suppressed event comes after the creation's own event, whose sequence is 1.
  await apply(db, transitions, options, created, writes, suppressedEvents);
  await writes.flush();
  return ids;
}

/**
 * PostgreSQL: ids for new mails from the mails' identity sequence, in order, with each one's API key name for
 * its application events (`withNames`), in one round trip, so the mails and everything that references them
 * can then be written by one statement.
 */
async function drawMailIds(
  db: DbOrTrx,
  apiKeyIds: ReadonlyArray<number | null>,
  withNames: boolean,
): Promise<Array<{ id: number; application_name: string | null }>> {
  const keys = withNames ? [...new Set(apiKeyIds.filter((k): k is number => k !== null))] : [];
  const { rows } = await sql<{ ids: string[]; names: Array<[number, string]> | null }>`
    select array(select nextval(pg_get_serial_sequence('mails', 'id')) from generate_series(1, ${apiKeyIds.length})) as ids,
      (select json_agg(json_build_array(id, name)) from api_keys where id = any(${keys}::bigint[])) as names`.execute(db);
  const row = rows[0]!;
  const names = new Map((row.names ?? []).map(([id, name]) => [Number(id), name]));
  // The sequence hands out increasing numbers; sorted, the mails keep their order.
  const ids = row.ids.map(Number).sort((a, b) => a - b);
  return ids.map((id, i) => {
    const key = apiKeyIds[i];
    return { id, application_name: key === null || key === undefined ? null : (names.get(key) ?? null) };
  });
}
