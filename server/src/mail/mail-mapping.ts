/**
 * Rows to the contract's types: the one `toMail`, used for stored rows and for mails just written (which
 * are answered from what was inserted, without reading them back), and the mail detail.
 */
import {
  laneOfCode,
  MailStatus,
  RECIPIENT_OUTCOMES,
  STATUSES,
  type Mail,
  type MailAttachment,
  type MailDetail,
  type MailEvent,
  type RecipientDelivery,
  type RecipientOutcome,
} from '@outbox/contract';
import type { Selectable } from 'kysely';
import { simpleParser } from 'mailparser';
import type { MailContentTable, MailEventRow, MailRecipientRow, MailRow } from '../store/schema.js';
import type { MailView } from './leases.js';

/** 0 is how the store says "not yet" for provider_sent_at (see store/schema.ts). */
export const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined || ms === 0 ? null : new Date(ms).toISOString();

export function statusName(code: number): string {
  return STATUSES[code]?.name ?? `status ${code}`;
}

/** The columns a `Mail` is made of: a stored row, or a row being inserted plus its new id. */
export type MailFields = Pick<MailRow, 'id' | 'from_name' | 'from_mail' | 'subject' | 'status' | 'received_at' | 'last_update_at'> & {
  provider_sent_at?: number | null | undefined;
  recipient_count?: number | undefined;
  rejected_recipients?: number | undefined;
  send_at?: number | null | undefined;
};

export function toMail(row: MailFields, recipients: ReadonlyArray<{ name: string; address: string }> = []): Mail {
  return {
    id: row.id,
    fromName: row.from_name,
    fromMail: row.from_mail,
    to: recipients.map((r) => ({ recipientName: r.name, recipientMail: r.address })),
    subject: row.subject,
    status: row.status,
    providerSentDate: iso(row.provider_sent_at),
    receivedDate: iso(row.received_at),
    lastUpdate: iso(row.last_update_at),
    recipientCount: row.recipient_count ?? 0,
    rejectedRecipients: row.rejected_recipients ?? 0,
    sendAt: iso(row.send_at),
  };
}

const isOutcome = (value: string | null): value is RecipientOutcome => (RECIPIENT_OUTCOMES as readonly (string | null)[]).includes(value);

/**
 * Every recipient row with its outcome. Outcomes are kept on the envelope rows (who the mail is delivered
 * to); a To/Cc/Bcc row shows the outcome of its address in the envelope, or null when it is not in it.
 */
function recipientDeliveries(recipients: MailRecipientRow[]): RecipientDelivery[] {
  const byAddress = new Map<string, MailRecipientRow>();
  for (const r of recipients) if (r.kind === 'envelope') byAddress.set(r.address.toLowerCase(), r);
  return recipients.map((r) => {
    const envelope = r.kind === 'envelope' ? r : byAddress.get(r.address.toLowerCase());
    const outcome = envelope?.outcome ?? null;
    return {
      kind: r.kind === 'to' || r.kind === 'cc' || r.kind === 'bcc' ? r.kind : 'envelope',
      recipientName: r.name,
      recipientMail: r.address,
      outcome: isOutcome(outcome) ? outcome : null,
      reply: envelope?.reply ?? null,
      updatedAt: iso(envelope?.updated_at),
    };
  });
}

interface ReadMessage {
  headers: MailDetail['headers'];
  attachments: MailAttachment[];
  /** Only when asked for: the bodies as intake stored them before (simpleParser's text and html). */
  bodies?: { text: string | null; html: string | null };
}

/**
 * The header block as name/value pairs (in order, unfolded) and the attachments, parsed from the stored bytes.
 * A message without a multipart body has no attachments, so only its header block is parsed, unless the
 * bodies are asked for too: an SMTP mail stores none of its own (submission-preparation.ts), so they are read
 * here with the options intake used to store them with (text from the HTML when there is no text part).
 */
async function readMessage(raw: Buffer, withBodies: boolean): Promise<ReadMessage> {
  const end = raw.indexOf('\r\n\r\n');
  const headerBlock = end >= 0 ? raw.subarray(0, end + 4) : raw;
  const multipart = /^content-type:[ \t]*multipart\//im.test(headerBlock.toString('latin1').replace(/\r\n[ \t]+/g, ' '));
  const parsed = await simpleParser(withBodies || multipart ? raw : headerBlock, {
    skipHtmlToText: !withBodies,
    skipTextToHtml: true,
    skipImageLinks: true,
  });
  const headers = parsed.headerLines.map((line) => {
    const colon = line.line.indexOf(':');
    return {
      name: line.line.slice(0, colon),
      value: line.line
        .slice(colon + 1)
        .replace(/\r?\n[ \t]+/g, ' ')
        .trim(),
    };
  });
  const attachments = parsed.attachments.map((a) => ({
    filename: a.filename ?? null,
    contentType: a.contentType,
    size: a.size,
    disposition: a.contentDisposition === 'inline' ? ('inline' as const) : ('attachment' as const),
  }));
  if (!withBodies) return { headers, attachments };
  return { headers, attachments, bodies: { text: parsed.text ?? null, html: typeof parsed.html === 'string' ? parsed.html : null } };
}

/** The row, its message (headers and bodies parsed from the stored bytes) and its event log. */
export async function toMailDetail(
  row: MailView,
  recipients: MailRecipientRow[],
  content: Selectable<MailContentTable> | undefined,
  events: MailEventRow[],
): Promise<MailDetail> {
  const ofKind = (kind: string) => recipients.filter((r) => r.kind === kind);
  // Both bodies null: an SMTP mail (its bodies live only in the raw bytes), or a JSON mail without a body,
  // whose bytes then hold none either, so parsing them gives null and null as before.
  const bodiesInRaw = content !== undefined && content.text_body === null && content.html_body === null;
  const message: ReadMessage = content?.raw ? await readMessage(content.raw, bodiesInRaw) : { headers: [], attachments: [] };
  const { headers, attachments } = message;
  return {
    ...toMail(row, ofKind('to')),
    messageId: row.message_id,
    cc: ofKind('cc').map((r) => ({ recipientName: r.name, recipientMail: r.address })),
    bcc: ofKind('bcc').map((r) => ({ recipientName: r.name, recipientMail: r.address })),
    envelopeFrom: content?.envelope_from ?? null,
    envelopeTo: ofKind('envelope').map((r) => r.address),
    attempts: row.attempts,
    nextAttemptAt: row.status === MailStatus.Queued ? iso(row.next_attempt_at) : null,
    providerReply: row.provider_reply,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: iso(row.lease_expires_at),
    lane: laneOfCode(row.lane),
    sizeBytes: content?.size_bytes ?? null,
    headers,
    text: message.bodies ? message.bodies.text : (content?.text_body ?? null),
    html: message.bodies ? message.bodies.html : (content?.html_body ?? null),
    recipients: recipientDeliveries(recipients),
    attachments,
    events: events.map(toMailEvent),
    contentRemovedAt: iso(row.content_removed_at),
  };
}

export function toMailEvent(e: MailEventRow): MailEvent {
  return {
    at: new Date(e.at).toISOString(),
    actor: e.actor,
    type: e.type,
    fromStatus: e.from_status,
    toStatus: e.to_status,
    detail: e.detail ? (JSON.parse(e.detail) as Record<string, unknown>) : null,
  };
}
