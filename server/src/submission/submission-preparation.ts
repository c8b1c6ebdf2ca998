/**
 * Preparing a submission for the store (docs/api.md): a JSON submission is composed into its RFC 5322
 * bytes (message-builder.ts), an SMTP one is kept byte for byte and only its header block is read, for
 * the list's columns; its bodies are parsed from the stored bytes when the mail is opened (mail-mapping.ts).
 * Both become the rows to insert: the mail (Queued, due now), its recipients and its content. The
 * Message-ID is fixed here, so a resend after a crash carries the same one.
 */
import MailsplitHeaders from '@zone-eu/mailsplit/lib/headers.js';
import { MailParser, simpleParser, type AddressObject } from 'mailparser';
import { LANE_CODES, type SubmitMailRequest } from '@outbox/contract';
import type { ApiKeyPrincipal } from '../auth/auth.service.js';
import { composeMessage } from './message-builder.js';
import type { NewMail, NewRecipient } from '../mail/mail.repository.js';

export interface RawSubmission {
  envelopeFrom: string;
  envelopeTo: string[];
  raw: Buffer;
  messageId: string;
  /** The X-Outbox-Send-At header's instant, read and removed by the listener; null or absent: send at once. */
  sendAt?: number | null | undefined;
  /** The X-Outbox-Lane header's lane code, read and removed by the listener; null or absent: the application's. */
  lane?: number | null | undefined;
}

export interface PreparedMail {
  mail: NewMail;
  idempotencyKey: string | null;
}

function newRow(
  principal: ApiKeyPrincipal,
  fields: { messageId: string; fromName: string; fromMail: string; subject: string; idempotencyKey: string | null },
  now: number,
  sendAt: number | null,
  lane: number,
): NewMail['row'] {
  return {
    message_id: fields.messageId,
    from_name: fields.fromName,
    from_mail: fields.fromMail,
    subject: fields.subject,
    received_at: now,
    last_update_at: now,
    // A scheduled mail waits in the queue until then (docs/api.md#scheduled-sends).
    next_attempt_at: sendAt ?? now,
    send_at: sendAt,
    lane,
    provider_reply: null,
    api_key_id: principal.id,
    idempotency_key: fields.idempotencyKey,
  };
}

export function prepareJson(
  principal: ApiKeyPrincipal,
  input: SubmitMailRequest,
  index: number | undefined,
  now: number,
  sendAt: number | null = null,
): PreparedMail {
  let built;
  try {
    // submitJson checked the input (submissionProblems includes checkMessageInput) before preparing any.
    built = composeMessage({ ...input, date: new Date(now) });
  } catch (error) {
    if (index !== undefined && error instanceof Error) error.message = `mail [${index}]: ${error.message}`;
    throw error;
  }
  const recipients: NewRecipient[] = [
    ...(['to', 'cc', 'bcc'] as const).flatMap((kind) =>
      (input[kind] ?? []).map((r) => ({ kind, name: r.recipientName ?? '', address: r.recipientMail })),
    ),
    ...built.envelope.to.map((address) => ({ kind: 'envelope', name: '', address })),
  ];
  const fromName = input.fromName ?? '';
  return {
    idempotencyKey: input.idempotencyKey ?? null,
    mail: {
      row: newRow(
        principal,
        {
          messageId: built.messageId,
          fromName,
          fromMail: input.fromMail,
          subject: input.subject,
          idempotencyKey: input.idempotencyKey ?? null,
        },
        now,
        sendAt,
        input.lane === undefined ? principal.lane : LANE_CODES[input.lane],
      ),
      recipients,
      content: {
        raw: built.raw,
        textBody: input.text ?? null,
        htmlBody: input.html ?? null,
        headersJson: input.headers ? JSON.stringify(input.headers) : null,
        envelopeFrom: built.envelope.from,
        sizeBytes: built.raw.length,
      },
    },
  };
}

interface SummaryHeaders {
  from?: AddressObject | undefined;
  to?: AddressObject | AddressObject[] | undefined;
  cc?: AddressObject | AddressObject[] | undefined;
  subject?: string | undefined;
}

/** The header lines mailparser reads for the summary; every other line is left out before decoding. */
const SUMMARY_KEYS = new Set(['from', 'to', 'cc', 'subject']);
/**
 * mailsplit refuses a header block past 1 MiB, a line counting at least 64 bytes: a block up to 16 KiB
 * (8,192 lines at most) can never reach it, so only larger ones need the whole parser to decide.
 */
const FAST_HEADER_BLOCK_BYTES = 16 * 1024;
/**
 * One MailParser kept only for its header decoding (`processHeaders`: RFC 2047 words, address groups,
 * punycode, the first-value rule), so From, To, Cc and Subject come out exactly as simpleParser gives them.
 * It is mailparser's own code, not a copy; test/submission/summary-headers.test.ts compares both on hostile headers.
 */
const headerDecoder = new MailParser() as unknown as {
  processHeaders(lines: { key: string; line: string }[]): Map<string, unknown>;
};

/**
 * From, To, Cc and Subject of a message as simpleParser reads them, from its header block alone: the
 * same splitting (mailsplit's Headers over the bytes up to the empty line) and the same decoding, without
 * running the MIME parser over the bodies (140–420 µs a mail at intake).
 */
export async function readSummaryHeaders(raw: Buffer): Promise<SummaryHeaders> {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0 || end + 4 > FAST_HEADER_BLOCK_BYTES || raw[0] === 0x0d || raw[0] === 0x0a) {
    // No empty line (all header), a very large block, or one that starts empty: the whole parser decides.
    const parsed = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true, skipHtmlToText: true });
    return { from: parsed.from, to: parsed.to, cc: parsed.cc, subject: parsed.subject };
  }
  const lines = new MailsplitHeaders(raw.subarray(0, end + 4)).getList().filter((line) => SUMMARY_KEYS.has(line.key));
  const headers = headerDecoder.processHeaders(lines);
  return {
    from: headers.get('from') as AddressObject | undefined,
    to: headers.get('to') as AddressObject | AddressObject[] | undefined,
    cc: headers.get('cc') as AddressObject | AddressObject[] | undefined,
    subject: headers.get('subject') as string | undefined,
  };
}

export async function prepareRaw(principal: ApiKeyPrincipal, submission: RawSubmission, now: number): Promise<PreparedMail> {
  const parsed = await readSummaryHeaders(submission.raw);
  const from = parsed.from?.value[0];
  const listOf = (field: AddressObject | AddressObject[] | undefined) =>
    (Array.isArray(field) ? field : field ? [field] : []).flatMap((group) => group.value).filter((a) => a.address);
  const recipients: NewRecipient[] = [
    ...listOf(parsed.to).map((a) => ({ kind: 'to', name: a.name ?? '', address: a.address! })),
    ...listOf(parsed.cc).map((a) => ({ kind: 'cc', name: a.name ?? '', address: a.address! })),
    // The envelope decides who receives it, whatever the headers say (Bcc, lists).
    ...submission.envelopeTo.map((address) => ({ kind: 'envelope', name: '', address })),
  ];
  if (!recipients.some((r) => r.kind === 'to')) {
    // No To header: show the envelope recipients so the console's To column is never empty.
    recipients.push(...submission.envelopeTo.map((address) => ({ kind: 'to', name: '', address })));
  }
  const fromName = from?.name ?? '';
  const fromMail = from?.address ?? submission.envelopeFrom;
  const subject = parsed.subject ?? '';
  return {
    idempotencyKey: null,
    mail: {
      row: newRow(
        principal,
        {
          messageId: submission.messageId,
          fromName,
          fromMail,
          subject,
          idempotencyKey: null,
        },
        now,
        submission.sendAt ?? null,
        submission.lane ?? principal.lane,
      ),
      recipients,
      content: {
        raw: submission.raw,
        // No second copy of the bodies: the detail parses them from the raw bytes (mail-mapping.ts).
        textBody: null,
        htmlBody: null,
        headersJson: null,
        envelopeFrom: submission.envelopeFrom,
        sizeBytes: submission.raw.length,
      },
    },
  };
}
