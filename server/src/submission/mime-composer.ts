/**
 * A composer for the messages a JSON submission makes (text, HTML or both; no attachments), writing the
 * bytes nodemailer's MailComposer writes for the same input, in about a sixth of its time. MailComposer builds a
 * tree of MimeNodes (each normalising header names with a dozen regexps and drawing its own random
 * boundary) and streams it through Transforms with a `setImmediate` between parts: ~250 µs per mail,
 * the largest cost of intake (docs/benchmarks.md). This writes the same header block, transfer
 * encodings and boundaries directly, with nodemailer's own encoding functions (mime-funcs, qp, base64).
 *
 * It only takes the inputs whose output it can vouch for, and answers `undefined` for the rest (an
 * address that is not plain ASCII, a custom header nodemailer formats specially, no body at all), which
 * message-builder.ts then composes with MailComposer. `mime-composer.test.ts` compares the two outputs
 * byte for byte over generated mails.
 */
import mimeFuncs from 'nodemailer/lib/mime-funcs/index.js';
import base64 from 'nodemailer/lib/base64/index.js';
import qp from 'nodemailer/lib/qp/index.js';

export interface ComposeAddress {
  name: string;
  address: string;
}

export interface ComposeInput {
  from: ComposeAddress;
  to: ComposeAddress[];
  cc: ComposeAddress[];
  subject: string;
  text: string | undefined;
  html: string | undefined;
  headers: Record<string, string> | undefined;
  messageId: string;
  date: Date;
  /** The random part of the multipart boundary (nodemailer: 8 random bytes in hex). */
  baseBoundary: string;
}

const LINE_LENGTH = 76;
/** Addresses whose header form is the address itself, lower-casing the domain (nodemailer punycodes it). */
const PLAIN_ADDRESS = /^[A-Za-z0-9._+-]+@[A-Za-z0-9.-]+$/;
/** Header names nodemailer formats in a way of their own (addresses, message ids, dates, MIME fields). */
const SPECIAL_HEADERS = new Set([
  'From',
  'Sender',
  'To',
  'Cc',
  'Bcc',
  'Reply-To',
  'Message-ID',
  'In-Reply-To',
  'Content-Id',
  'References',
  'Date',
  'Content-Type',
  'Content-Disposition',
  'Content-Transfer-Encoding',
  'MIME-Version',
]);

/** MimeNode#_normalizeHeaderKey. */
function normalizeHeaderKey(key: string): string {
  return key
    .replace(/\r?\n|\r/g, ' ')
    .trim()
    .toLowerCase()
    .replace(/^X-SMTPAPI$|^(MIME|DKIM|ARC|BIMI)\b|^[a-z]|-(SPF|FBL|ID|MD5)$|-[a-z]/gi, (c) => c.toUpperCase())
    .replace(/^Content-Features$/i, 'Content-features');
}

/**
 * MimeNode#_getTextEncoding: Q when latin letters outnumber the 8-bit and control characters, else B.
 * Counted in one pass instead of two regexp match arrays over the whole body.
 */
function textEncoding(value: string): 'Q' | 'B' {
  let latin = 0;
  let nonLatin = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)) latin++;
    else if (c >= 0x80 || c <= 0x08 || c === 0x0b || c === 0x0c || (c >= 0x0e && c <= 0x1f)) nonLatin++;
  }
  return nonLatin < latin ? 'Q' : 'B';
}

/** MimeNode#_encodeAddressName. */
function encodeAddressName(name: string): string {
  if (/^[\w ]*$/.test(name)) return name;
  if (/^[\x20-\x7e]*$/.test(name)) return '"' + name.replace(/([\\"])/g, '\\$1') + '"';
  return mimeFuncs.encodeWord(name, textEncoding(name), 52);
}

/** MimeNode#_convertAddresses for plain addresses; undefined for one it does not vouch for. */
function formatAddresses(list: ComposeAddress[]): string | undefined {
  const values: string[] = [];
  for (const { name, address } of list) {
    if (!PLAIN_ADDRESS.test(address)) return undefined;
    const at = address.lastIndexOf('@');
    const normalized = address.slice(0, at + 1) + address.slice(at + 1).toLowerCase();
    values.push(name ? `${encodeAddressName(name)} <${normalized}>` : normalized);
  }
  return values.join(', ');
}

/** MimeNode#_encodeWords: encoded words only where needed, whole words, Q or B as the text suggests. */
function encodeWords(value: string): string {
  return (mimeFuncs.encodeWords as (v: string, e: 'Q' | 'B', max: number, all: boolean) => string)(value, textEncoding(value), 52, true);
}

/** A header line as MimeNode#buildHeaders writes it; empty values are left out as it leaves them out. */
function headerLine(lines: string[], key: string, value: string): void {
  if (!value.trim()) return;
  lines.push(mimeFuncs.foldLines(key + ': ' + value, LINE_LENGTH));
}

/** MimeNode#getTransferEncoding for a text part whose content is a non-empty string. */
function transferEncodingOf(content: string): '7bit' | 'quoted-printable' | 'base64' {
  if (mimeFuncs.isPlainText(content) && !mimeFuncs.hasLongerLines(content, LINE_LENGTH)) return '7bit';
  return textEncoding(content) === 'Q' ? 'quoted-printable' : 'base64';
}

/** The body as qp.Encoder / base64.Encoder write one chunk (the whole string): see mime-serializer.ts. */
function encodeBody(content: string, transferEncoding: string): string {
  if (transferEncoding === 'quoted-printable') return qp.wrap(qp.encode(Buffer.from(content, 'utf8')), LINE_LENGTH);
  if (transferEncoding === 'base64') {
    const bytes = Buffer.from(content, 'utf8');
    const whole = bytes.length - (bytes.length % 3);
    const wrapped = base64.wrap(base64.encode(bytes.subarray(0, whole)), LINE_LENGTH);
    return wrapped + (whole < bytes.length ? base64.encode(bytes.subarray(whole)) : '');
  }
  return content;
}

interface Part {
  contentType: string;
  content: string;
}

/**
 * The message as nodemailer's MailComposer + MimeNode#build write it, before the SMTP line-ending step
 * of message-builder.ts, or undefined when this input is not one this composer vouches for.
 */
export function composeMime(input: ComposeInput): string | undefined {
  const parts: Part[] = [];
  // MailComposer skips an empty text or html (a falsy value), as it skips an absent one.
  if (input.text) parts.push({ contentType: 'text/plain; charset=utf-8', content: input.text });
  if (input.html) parts.push({ contentType: 'text/html; charset=utf-8', content: input.html });
  if (parts.length === 0) return undefined;

  const lines: string[] = [];
  // Custom headers first, in their order, as MailComposer adds them before its own.
  for (const [name, value] of Object.entries(input.headers ?? {})) {
    const key = normalizeHeaderKey(name);
    if (SPECIAL_HEADERS.has(key)) return undefined;
    headerLine(lines, key, encodeWords(value.replace(/\r?\n|\r/g, ' ')));
  }
  const from = formatAddresses([input.from]);
  const to = formatAddresses(input.to);
  const cc = formatAddresses(input.cc);
  if (from === undefined || to === undefined || cc === undefined) return undefined;
  headerLine(lines, 'From', from);
  headerLine(lines, 'To', to);
  headerLine(lines, 'Cc', cc);
  // Bcc is never written: the envelope carries it.
  headerLine(lines, 'Subject', encodeWords(input.subject.replace(/\r?\n|\r/g, ' ')));
  headerLine(lines, 'Message-ID', input.messageId);
  headerLine(lines, 'Date', input.date.toUTCString().replace(/GMT/, '+0000'));

  let body: string;
  if (parts.length === 1) {
    const [part] = parts as [Part];
    const transferEncoding = transferEncodingOf(part.content);
    headerLine(lines, 'Content-Transfer-Encoding', transferEncoding);
    headerLine(lines, 'MIME-Version', '1.0');
    headerLine(lines, 'Content-Type', part.contentType);
    body = lines.join('\r\n') + '\r\n\r\n' + encodeBody(part.content, transferEncoding);
  } else {
    // The root is node 1; its parts are nodes 2 and 3, but only the root's boundary is written.
    const boundary = `--_NmP-${input.baseBoundary}-Part_1`;
    headerLine(lines, 'MIME-Version', '1.0');
    headerLine(lines, 'Content-Type', mimeFuncs.buildHeaderValue({ value: 'multipart/alternative', params: { boundary } }));
    const out = [lines.join('\r\n') + '\r\n\r\n'];
    parts.forEach((part, i) => {
      const transferEncoding = transferEncodingOf(part.content);
      out.push(
        (i > 0 ? '\r\n' : '') + '--' + boundary + '\r\n',
        `Content-Type: ${part.contentType}\r\nContent-Transfer-Encoding: ${transferEncoding}\r\n\r\n`,
        encodeBody(part.content, transferEncoding),
      );
    });
    out.push('\r\n--' + boundary + '--\r\n');
    body = out.join('');
  }
  // MimeNode's LastNewline: a message always ends with a line break.
  if (!body.endsWith('\n')) body += body.endsWith('\r') ? '\n' : '\r\n';
  return body;
}
