/**
 * Turns a JSON submission (PRODUCT.md §2, `POST /api/v1/mail`) into the raw RFC 5322 message that is
 * stored and later relayed byte for byte. The Message-ID is fixed here, at acceptance, so that a
 * resend after a crash carries the same one (PRODUCT.md §1).
 */
import { randomUUID } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { systemClock } from '../clock.js';
import { badRequest } from '../errors.js';

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
    if (RESERVED_HEADERS.has(name.toLowerCase())) {
      problems.push(`${field} is set by Outbox and cannot be given as a custom header`);
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
 * receives, so the raw .eml shown to operators is what was sent.
 */
function toSmtpLineEndings(message: Buffer): Buffer {
  // latin1 maps each byte to one character and back, so non-ASCII bytes pass through untouched.
  let text = message.toString('latin1').replace(/\r?\n/g, '\r\n');
  if (!text.endsWith('\r\n')) text += '\r\n';
  return Buffer.from(text, 'latin1');
}

function toAddress(recipient: Recipient): Mail.Address | string {
  return recipient.recipientName ? { name: recipient.recipientName, address: recipient.recipientMail } : recipient.recipientMail;
}

/** `<uuid@outbox.local>`: unique without coordination, and recognisable as ours in a provider's logs. */
export function createMessageId(): string {
  return `<${randomUUID()}@outbox.local>`;
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
  if (input.to.length + (input.cc?.length ?? 0) + (input.bcc?.length ?? 0) === 0) {
    problems.push('to, cc or bcc must name at least one recipient');
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

/**
 * Composes the message. Throws a 400 AppError listing every problem when the headers or addresses are
 * unusable; callers that validated with a schema first will only see it for what the schema cannot say.
 */
export async function buildMessage(input: MessageInput): Promise<BuiltMessage> {
  const problems = checkMessageInput(input);
  if (problems.length > 0) throw badRequest('invalid_message', problems.join('; '));

  const messageId = input.messageId ?? createMessageId();
  const cc = input.cc ?? [];
  const bcc = input.bcc ?? [];
  const options: Mail.Options = {
    from: input.fromName ? { name: input.fromName, address: input.fromMail } : input.fromMail,
    to: input.to.map(toAddress),
    subject: input.subject,
    messageId,
    date: input.date ?? new Date(systemClock.now()),
  };
  if (cc.length > 0) options.cc = cc.map(toAddress);
  // Bcc is given to the composer only so it can be dropped from the headers; the envelope carries it.
  if (bcc.length > 0) options.bcc = bcc.map(toAddress);
  if (input.text !== undefined) options.text = input.text;
  if (input.html !== undefined) options.html = input.html;
  if (input.headers !== undefined) options.headers = input.headers;

  const node = new MailComposer(options).compile();
  const built = await new Promise<Buffer>((resolve, reject) => {
    node.build((error, message) => (error ? reject(error) : resolve(message)));
  });
  const raw = toSmtpLineEndings(built);

  return {
    raw,
    messageId,
    envelope: {
      from: input.fromMail,
      to: [...input.to, ...cc, ...bcc].map((recipient) => recipient.recipientMail),
    },
  };
}
