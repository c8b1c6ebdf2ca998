/**
 * Turns a JSON submission (docs/api.md#submission-post-apiv1mail) into the raw RFC 5322 message that is
 * stored and later relayed byte for byte. The Message-ID is fixed here, at acceptance, so that a
 * resend after a crash carries the same one (docs/lifecycle.md §6).
 */
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { MAX_RECIPIENTS_PER_MAIL } from '@outbox/contract';
import { systemClock } from '../clock.js';
import { badRequest } from '../errors.js';
import { pooledRandomBytes } from '../random-pool.js';
import { getMessageIdDomain } from './mail-hostname.js';
import { composeMime } from './mime-composer.js';
import { serializeMime } from './mime-serializer.js';

export interface Recipient {
  recipientName?: string | null;
  recipientMail: string;
}

export interface MessageInput {
  fromName?: string | null;
  fromMail: string;
  to: Recipient[];
  cc?: Recipient[];
  bcc?: Recipient[];
  subject: string;
  text?: string;
  html?: string;
  headers?: Record<string, string>;
  /** With angle brackets, e.g. `<abc@example.com>`. Generated when absent. */
  messageId?: string;
  date?: Date;
  /** Relay with `MAIL FROM:<>` (auto-replies, bounces); the From header still names fromMail. */
  nullSender?: boolean;
  /** The random part of a multipart boundary; drawn when absent (tests fix it to compare bytes). */
  baseBoundary?: string;
}

export interface BuiltMessage {
  raw: Buffer;
  messageId: string;
  envelope: { from: string; to: string[] };
}

/** Fields the builder writes itself; letting a caller set them would forge or break the message. */
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'message-id',
  'date',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
]);

/**
 * Fields a submitter must not set, because they would make the message lie about its path or its
 * signature, or break its MIME structure. Each is documented in docs with the reason.
 */
const REFUSED_HEADERS = new Map<string, string>([
  ['return-path', 'is written by the final delivery server from the envelope sender'],
  ['received', 'is a trace header written by each server the mail passes through'],
  ['dkim-signature', 'is a signature that only the signing server may add'],
  ['arc-seal', 'is a signature that only the signing server may add'],
  ['arc-message-signature', 'is a signature that only the signing server may add'],
  ['arc-authentication-results', 'is a signature that only the signing server may add'],
  ['authentication-results', 'is written by the receiving server after its checks'],
  ['sender', 'names the submitter, which is Outbox, and would let a mail claim another'],
  ['content-disposition', 'belongs to the MIME parts Outbox composes, not to the whole message'],
  ['content-id', 'belongs to the MIME parts Outbox composes, not to the whole message'],
  ['__proto__', 'is not a header name'],
]);

/** `Resent-From`, `Resent-Date`, ...: the headers of a re-sent message (RFC 5322 §3.6.6), written by whoever re-sends it. */
const RESENT_PREFIX = 'resent-';

/** RFC 5322 §3.6.8 field-name: printable US-ASCII except the colon. */
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;

/** RFC 5322 §2.1.1 caps a line at 998 characters; a longer name could never be written. */
const MAX_FIELD_NAME_LENGTH = 998;

/**
 * Checks caller-supplied headers. Returns one human sentence per problem, each naming the field, so
 * the HTTP layer can answer 400 with all of them at once. An empty list means the headers are usable.
 */
export function validateHeaders(headers: Record<string, unknown> | undefined): string[] {
  const problems: string[] = [];
  if (headers === undefined) return problems;
  for (const [name, value] of Object.entries(headers)) {
    const field = `headers.${name}`;
    if (/[\r\n]/.test(name)) {
      // Checked first: a CR/LF in the name is an injection attempt, whatever else is wrong with it.
      problems.push(`${field} must not contain CR or LF`);
      continue;
    }
    if (name.length === 0 || name.length > MAX_FIELD_NAME_LENGTH || !FIELD_NAME.test(name)) {
      problems.push(`${field} is not a valid header name (printable ASCII without spaces or ":")`);
      continue;
    }
    const lowerName = name.toLowerCase();
    if (RESERVED_HEADERS.has(lowerName)) {
      problems.push(`${field} is set by Outbox and cannot be given as a custom header`);
      continue;
    }
    const refusal =
      REFUSED_HEADERS.get(lowerName) ?? (lowerName.startsWith(RESENT_PREFIX) ? 'is written by whoever re-sends a mail' : undefined);
    if (refusal !== undefined) {
      problems.push(`${field} cannot be given as a custom header: it ${refusal}`);
      continue;
    }
    if (typeof value !== 'string') {
      problems.push(`${field} must be a string`);
      continue;
    }
    if (/[\r\n]/.test(value)) {
      problems.push(`${field} must not contain CR or LF`);
    } else if (value.includes('\0')) {
      problems.push(`${field} must not contain NUL`);
    }
  }
  return problems;
}

/** RFC 5321 §4.5.3.1.3: a path is at most 256 octets including the angle brackets. */
const MAX_ADDRESS_LENGTH = 254;
const MAX_LOCAL_PART_LENGTH = 64;
/** Characters that would break a header or an SMTP command if they reached one unquoted. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const FORBIDDEN_IN_ADDRESS = /[\s<>()[\],;:"\\\x00-\x1f\x7f]/u;
const IPV4_LITERAL = /^\[(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\]$/;
const IPV6_LITERAL = /^\[IPv6:[0-9a-f:.]+\]$/i;
/** Letters of any script, digits and hyphens: internationalised domains are accepted as typed. */
const DOMAIN_LABEL = /^[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?$/u;

/**
 * A pragmatic address check, not a full RFC 5322 parser: quoted local parts and comments are refused
 * because they are rare in practice and easy to abuse for header or command injection.
 */
export function isValidAddress(address: string): boolean {
  if (typeof address !== 'string' || address.length === 0 || address.length > MAX_ADDRESS_LENGTH) return false;
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return false;
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);

  if (local.length > MAX_LOCAL_PART_LENGTH) return false;
  if (local.includes('@') || FORBIDDEN_IN_ADDRESS.test(local)) return false;
  if (local.startsWith('.') || local.endsWith('.') || local.includes('..')) return false;

  const ipv4 = IPV4_LITERAL.exec(domain);
  if (ipv4) return ipv4.slice(1).every((octet) => Number(octet) <= 255);
  if (IPV6_LITERAL.test(domain)) return true;
  if (FORBIDDEN_IN_ADDRESS.test(domain)) return false;
  if (domain.toLowerCase() === 'localhost') return true;
  const labels = domain.split('.');
  // A single label (other than localhost) is an intranet name that no provider will deliver to.
  if (labels.length < 2) return false;
  return labels.every((label) => DOMAIN_LABEL.test(label));
}

/**
 * The composer leaves a 7bit text body's bare LFs as given, and an SMTP client turns them into CRLF and
 * ends DATA with a CRLF of its own. Doing both here makes the stored bytes the bytes the provider
 * receives, so the raw .eml shown to operators is what was sent. (UTF-16 text: CR and LF never occur
 * inside a multi-byte UTF-8 sequence, so this is the same as doing it on the bytes.)
 */
function toSmtpLineEndings(message: string): Buffer {
  let text = message.replace(/\r?\n/g, '\r\n');
  if (!text.endsWith('\r\n')) text += '\r\n';
  return Buffer.from(text, 'utf8');
}

function toAddress(recipient: Recipient): Mail.Address | string {
  return recipient.recipientName ? { name: recipient.recipientName, address: recipient.recipientMail } : recipient.recipientMail;
}

/**
 * `<uuid@MAIL_HOSTNAME>`: unique without coordination, and under a domain of ours (RFC 5322 §3.6.4), so a
 * provider's logs show where it came from. `@outbox.local` was used before: a special-use mDNS name.
 * The UUID is version 7 (RFC 9562: the millisecond first, then 74 random bits), so the Message-IDs of one
 * group commit sit side by side in the `message_id` index instead of dirtying a page each.
 */
export function createMessageId(domain: string = getMessageIdDomain()): string {
  return `<${timeOrderedUuid()}@${domain}>`;
}

/** A version-7 UUID (RFC 9562 §5.7): the millisecond, then 74 random bits. */
function timeOrderedUuid(): string {
  const bytes = pooledRandomBytes(16);
  bytes.writeUIntBE(Date.now(), 0, 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f); // version 7
  bytes[8] = 0x80 | (bytes[8]! & 0x3f); // variant 10
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** 8 random bytes in hex, as nodemailer draws for a boundary. */
function randomBoundaryPart(): string {
  return pooledRandomBytes(8).toString('hex');
}

function checkAddresses(input: MessageInput): string[] {
  const problems: string[] = [];
  if (!isValidAddress(input.fromMail)) problems.push('fromMail is not a valid address');
  for (const list of ['to', 'cc', 'bcc'] as const) {
    (input[list] ?? []).forEach((recipient, index) => {
      if (!isValidAddress(recipient.recipientMail)) {
        problems.push(`${list}[${index}].recipientMail is not a valid address`);
      }
    });
  }
  const count = input.to.length + (input.cc?.length ?? 0) + (input.bcc?.length ?? 0);
  if (count === 0) {
    problems.push('to, cc or bcc must name at least one recipient');
  } else if (count > MAX_RECIPIENTS_PER_MAIL) {
    problems.push(`to, cc and bcc together name ${count} recipients; a mail has at most ${MAX_RECIPIENTS_PER_MAIL}`);
  }
  return problems;
}

/**
 * Every reason the builder would refuse this input, one sentence each naming the field relative to the
 * input (`fromMail ...`, `to[1].recipientMail ...`, `headers.X-A ...`), so a caller can check a whole batch
 * before composing any of it and prefix the names with where the input came from.
 */
export function checkMessageInput(input: MessageInput): string[] {
  const problems = [...checkAddresses(input), ...validateHeaders(input.headers)];
  if (input.messageId !== undefined && !/^<[^<>\s]+@[^<>\s]+>$/.test(input.messageId)) {
    problems.push('messageId must look like <id@domain>');
  }
  return problems;
}

/** MailComposer's options for a message input (the reference mime-composer.ts writes the same bytes as). */
export function composerOptions(input: MessageInput, messageId: string, date: Date, baseBoundary: string): Mail.Options {
  // MailComposer reads baseBoundary (it passes it to its root MimeNode); @types/nodemailer does not list it.
  const options: Mail.Options & { baseBoundary: string } = {
    from: input.fromName ? { name: input.fromName, address: input.fromMail } : input.fromMail,
    to: input.to.map(toAddress),
    subject: input.subject,
    messageId,
    date,
    baseBoundary,
  };
  if (input.cc && input.cc.length > 0) options.cc = input.cc.map(toAddress);
  // Bcc is given to the composer only so it can be dropped from the headers; the envelope carries it.
  if (input.bcc && input.bcc.length > 0) options.bcc = input.bcc.map(toAddress);
  if (input.text !== undefined) options.text = input.text;
  if (input.html !== undefined) options.html = input.html;
  if (input.headers !== undefined) options.headers = input.headers;
  return options;
}

/**
 * Composes the message. Throws a 400 AppError listing every problem when the headers or addresses are
 * unusable; callers that validated with a schema first will only see it for what the schema cannot say.
 */
export async function buildMessage(input: MessageInput): Promise<BuiltMessage> {
  const problems = checkMessageInput(input);
  if (problems.length > 0) throw badRequest('invalid_message', problems.join('; '));
  return composeMessage(input);
}

/**
 * Composes a message whose input passed `checkMessageInput` already (the submission service checks every
 * mail of a batch before building any, so checking again here would only cost time).
 */
export function composeMessage(input: MessageInput): BuiltMessage {
  const messageId = input.messageId ?? createMessageId();
  const cc = input.cc ?? [];
  const bcc = input.bcc ?? [];
  const date = input.date ?? new Date(systemClock.now());
  const baseBoundary = input.baseBoundary ?? randomBoundaryPart();
  const address = (r: Recipient) => ({ name: r.recipientName ?? '', address: r.recipientMail });
  // The common case (plain addresses, text and/or HTML) is written directly (mime-composer.ts); the
  // rest goes through nodemailer's MailComposer, written out without its streams (mime-serializer.ts).
  const composed =
    composeMime({
      from: { name: input.fromName ?? '', address: input.fromMail },
      to: input.to.map(address),
      cc: cc.map(address),
      subject: input.subject,
      text: input.text,
      html: input.html,
      headers: input.headers,
      messageId,
      date,
      baseBoundary,
    }) ?? serializeMime(new MailComposer(composerOptions(input, messageId, date, baseBoundary)).compile());
  const raw = toSmtpLineEndings(composed);

  return {
    raw,
    messageId,
    envelope: {
      from: input.nullSender === true ? '' : input.fromMail,
      to: [...input.to, ...cc, ...bcc].map((recipient) => recipient.recipientMail),
    },
  };
}
