/**
 * What the SMTP listener changes in a submitted message before it is stored (docs/api.md#smtp-submission), each on the
 * raw bytes so that everything else stays exactly as the client sent it:
 * - line breaks: a bare LF becomes CRLF, as Postfix's `smtpd_forbid_bare_newline = normalize` does; a bare
 *   CR is refused (see `checkLineBreaks`);
 * - `Message-ID` and `Date` are added when missing (RFC 5322 §3.6 requires Date), fixed at acceptance so a
 *   resend carries the same bytes;
 * - `Bcc:` is removed, as submission servers do (RFC 6409 §8.1 allows it, RFC 5322 §3.6.3 expects it):
 *   the envelope keeps those recipients, the other recipients must not see them;
 * - `X-Outbox-Send-At:` (a scheduled send, docs/api.md#scheduled-sends) and `X-Outbox-Lane:` (docs/lanes.md) are
 *   read and removed: they are instructions to Outbox, not part of the message.
 * latin1 maps every byte to one character and back, so offsets are byte offsets and no byte is re-encoded.
 */
import { createMessageId } from '../submission/message-builder.js';

interface HeaderField {
  /** As written, without the colon and trailing blanks. */
  name: string;
  /** Unfolded, untrimmed. */
  value: string;
  /** Offsets of the field's first byte and of the byte after its last line break. */
  start: number;
  end: number;
}

/** The fields of the header block (up to the first empty line), folded lines joined to their field. */
function readHeaderFields(text: string): HeaderField[] {
  const fields: HeaderField[] = [];
  let current: HeaderField | undefined;
  let position = 0;
  while (position < text.length) {
    const newline = text.indexOf('\n', position);
    const lineEnd = newline === -1 ? text.length : newline;
    const line = text.slice(position, lineEnd).replace(/\r$/, '');
    const next = newline === -1 ? text.length : newline + 1;
    if (line.length === 0) break; // the empty line that ends the header block
    if (/^[ \t]/.test(line)) {
      // A folded continuation of the previous field (RFC 5322 §2.2.3).
      if (current) {
        current.value += line;
        current.end = next;
      }
    } else {
      const colon = line.indexOf(':');
      // `Name :` with space before the colon is obsolete syntax (RFC 5322 §4.5) that mail still carries.
      current = colon > 0 ? { name: line.slice(0, colon).trimEnd(), value: line.slice(colon + 1), start: position, end: next } : undefined;
      if (current) fields.push(current);
    }
    position = next;
  }
  return fields;
}

/**
 * The header block as latin1 text: up to the empty line that ends it (readHeaderFields stops there), or the
 * whole message when it has none. Only this part is turned into a string, so a 10 MB body costs no copies.
 */
function headerText(raw: Buffer): string {
  if (raw[0] === 0x0a || (raw[0] === 0x0d && raw[1] === 0x0a)) return '';
  const crlf = raw.indexOf('\n\r\n');
  const lf = raw.indexOf('\n\n');
  const end = crlf === -1 ? lf : lf === -1 ? crlf : Math.min(crlf, lf);
  return raw.toString('latin1', 0, end === -1 ? raw.length : end + 1);
}

function findField(text: string, name: string): HeaderField | undefined {
  return readHeaderFields(text).find((field) => field.name.toLowerCase() === name && field.value.trim().length > 0);
}

/** The line break the message's first line ends with (CRLF when it has none), for a field put before it. */
function lineBreakOf(raw: Buffer): string {
  const newline = raw.indexOf(0x0a);
  return newline === -1 || raw[newline - 1] === 0x0d ? '\r\n' : '\n';
}

export interface MessageIdResult {
  raw: Buffer;
  messageId: string;
  added: boolean;
}

/**
 * Finds the Message-ID in the header block, or prepends a new one. The bytes of a message that has one are
 * returned unchanged.
 */
export function ensureMessageId(raw: Buffer, createId: () => string = createMessageId): MessageIdResult {
  const found = findField(headerText(raw), 'message-id');
  if (found) return { raw, messageId: found.value.trim(), added: false };
  const messageId = createId();
  return { raw: Buffer.concat([Buffer.from(`Message-ID: ${messageId}${lineBreakOf(raw)}`, 'latin1'), raw]), messageId, added: true };
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * RFC 5322 §3.3 date-time in UTC with a numeric zone (`GMT`, which toUTCString writes, is obsolete syntax),
 * written like the composer of JSON mail writes it: `Thu, 01 Jan 2026 00:00:00 +0000`.
 */
export function formatRfc5322Date(ms: number): string {
  const date = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return (
    `${DAYS[date.getUTCDay()]}, ${two(date.getUTCDate())} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()} ` +
    `${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())} +0000`
  );
}

/** Prepends `Date:` (the acceptance time) when the header block has none; otherwise the bytes are unchanged. */
export function ensureDate(raw: Buffer, now: number): { raw: Buffer; added: boolean } {
  if (findField(headerText(raw), 'date')) return { raw, added: false };
  return { raw: Buffer.concat([Buffer.from(`Date: ${formatRfc5322Date(now)}${lineBreakOf(raw)}`, 'latin1'), raw]), added: true };
}

/**
 * Removes every field of this name (case-insensitive) with its folded lines, and answers their unfolded values;
 * the rest of the message keeps its bytes.
 */
export function takeFields(raw: Buffer, name: string): { raw: Buffer; values: string[] } {
  const lower = name.toLowerCase();
  const taken = readHeaderFields(headerText(raw)).filter((field) => field.name.toLowerCase() === lower);
  if (taken.length === 0) return { raw, values: [] };
  // latin1 offsets are byte offsets, so the kept parts are slices of the bytes themselves.
  const kept: Buffer[] = [];
  let position = 0;
  for (const field of taken) {
    kept.push(raw.subarray(position, field.start));
    position = field.end;
  }
  kept.push(raw.subarray(position));
  return { raw: Buffer.concat(kept), values: taken.map((field) => field.value.replace(/\r?\n/g, '').trim()) };
}

/** Removes every `Bcc:` field with its folded lines; the rest of the message keeps its bytes. */
export function removeBcc(raw: Buffer): { raw: Buffer; removed: number } {
  const { raw: kept, values } = takeFields(raw, 'bcc');
  return { raw: kept, removed: values.length };
}

export type LineBreakCheck = { ok: true; raw: Buffer; normalisedLf: number } | { ok: false; offset: number };

/**
 * SMTP ends a line with CRLF only (RFC 5321 §2.3.8). Relays that also end lines at a bare LF or a bare CR
 * can be made to see a different end of DATA than the one Outbox saw (SMTP smuggling, CVE-2023-51764/5/6),
 * so no bare line break is stored:
 * - a bare LF becomes CRLF, which is what Postfix 3.9 does by default (`smtpd_forbid_bare_newline =
 *   normalize`), what nodemailer would send anyway, and what every mail client means by it;
 * - a bare CR is refused: no client means a line break by it, and passing it on (`\r.\r`) is the shape
 *   of the smuggling attack against relays that end lines at CR.
 */
export function checkLineBreaks(raw: Buffer): LineBreakCheck {
  // indexOf scans natively: a 25 MB message costs milliseconds, not a callback per byte.
  for (let cr = raw.indexOf(0x0d); cr !== -1; cr = raw.indexOf(0x0d, cr + 1)) {
    if (raw[cr + 1] !== 0x0a) return { ok: false, offset: cr };
  }
  let normalisedLf = 0;
  for (let lf = raw.indexOf(0x0a); lf !== -1; lf = raw.indexOf(0x0a, lf + 1)) {
    if (lf === 0 || raw[lf - 1] !== 0x0d) normalisedLf += 1;
  }
  if (normalisedLf === 0) return { ok: true, raw, normalisedLf };
  return { ok: true, raw: Buffer.from(raw.toString('latin1').replace(/(?<!\r)\n/g, '\r\n'), 'latin1'), normalisedLf };
}
