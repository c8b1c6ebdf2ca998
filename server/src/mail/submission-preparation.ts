/**
 * Preparing a submission for the store (docs/api.md): a JSON submission is composed into its RFC 5322
 * bytes (message-builder.ts), an SMTP one is kept byte for byte and only parsed for the list's columns.
 * Both become the rows to insert: the mail (Queued, due now), its recipients and its content. The
 * Message-ID is fixed here, so a resend after a crash carries the same one.
 */
import { simpleParser, type AddressObject } from 'mailparser';
import { MailStatus, type SubmitMailRequest } from '@outbox/contract';
import type { ApiKeyPrincipal } from '../auth/auth.service.js';
import { composeMessage } from './message-builder.js';
import type { NewMail, NewRecipient } from './mail.repository.js';

export interface RawSubmission {
  envelopeFrom: string;
  envelopeTo: string[];
  raw: Buffer;
  messageId: string;
}

export interface PreparedMail {
  mail: NewMail;
  idempotencyKey: string | null;
}

const searchTextOf = (fromName: string, fromMail: string, recipients: NewRecipient[], subject: string) =>
  [fromName, fromMail, ...recipients.filter((r) => r.kind !== 'envelope').flatMap((r) => [r.name, r.address]), subject]
    .join(' ')
    .toLowerCase();

function newRow(
  principal: ApiKeyPrincipal,
  fields: { messageId: string; fromName: string; fromMail: string; subject: string; searchText: string; idempotencyKey: string | null },
  now: number,
): NewMail['row'] {
  return {
    message_id: fields.messageId,
    from_name: fields.fromName,
    from_mail: fields.fromMail,
    subject: fields.subject,
    status: MailStatus.Queued,
    search_text: fields.searchText,
    received_at: now,
    last_update_at: now,
    next_attempt_at: now,
    lease_owner: null,
    lease_expires_at: null,
    provider_reply: null,
    api_key_id: principal.id,
    idempotency_key: fields.idempotencyKey,
  };
}

export function prepareJson(principal: ApiKeyPrincipal, input: SubmitMailRequest, index: number | undefined, now: number): PreparedMail {
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
          searchText: searchTextOf(fromName, input.fromMail, recipients, input.subject),
          idempotencyKey: input.idempotencyKey ?? null,
        },
        now,
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

export async function prepareRaw(principal: ApiKeyPrincipal, submission: RawSubmission, now: number): Promise<PreparedMail> {
  const parsed = await simpleParser(submission.raw, { skipImageLinks: true, skipTextToHtml: true });
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
          searchText: searchTextOf(fromName, fromMail, recipients, subject),
          idempotencyKey: null,
        },
        now,
      ),
      recipients,
      content: {
        raw: submission.raw,
        textBody: parsed.text ?? null,
        htmlBody: typeof parsed.html === 'string' ? parsed.html : null,
        headersJson: null,
        envelopeFrom: submission.envelopeFrom,
        sizeBytes: submission.raw.length,
      },
    },
  };
}
