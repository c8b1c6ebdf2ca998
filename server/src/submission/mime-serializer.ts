/**
 * Writes out a nodemailer MIME tree (MailComposer#compile) in one synchronous pass, producing the bytes
 * `MimeNode#build` produces, without its streams. `build` pipes every part through a PassThrough, a
 * quoted-printable or base64 Transform and a last-newline Transform, with a `setImmediate` between parts:
 * about half of a ~250 µs composition went to that machinery (docs/benchmarks.md). The header block,
 * the choice of transfer encoding, the boundaries and the encoders are nodemailer's own functions; only
 * the plumbing is replaced. `mime-composer.test.ts` compares the output with `build()`'s byte for byte
 * (the mails mime-composer.ts passes on: IDN and unicode addresses, special custom headers, no body), so
 * a nodemailer upgrade that changes its output fails there, not in production.
 *
 * Only string content is supported (all a JSON submission can carry); anything else throws, so a caller
 * that starts sending attachments notices at once.
 */
import type MimeNode from 'nodemailer/lib/mime-node/index.js';
import base64 from 'nodemailer/lib/base64/index.js';
import qp from 'nodemailer/lib/qp/index.js';

const LINE_LENGTH = 76;

/**
 * One content chunk through `qp.Encoder`: wrap(encode(chunk)), the last line held back and written at the
 * end, which joins it back on. A string body reaches the encoder as one chunk (PassThrough#end(string)).
 */
function quotedPrintable(content: Buffer): string {
  return qp.wrap(qp.encode(content), LINE_LENGTH);
}

/**
 * One chunk through `base64.Encoder`: the bytes past the last multiple of three are held back and
 * encoded at the end, after the wrapped lines, without wrapping again (so the last line can be longer
 * than 76 characters, as nodemailer writes it).
 */
function base64Body(content: Buffer): string {
  const whole = content.length - (content.length % 3);
  let head = base64.wrap(base64.encode(content.subarray(0, whole)), LINE_LENGTH);
  const lastLf = head.lastIndexOf('\n');
  if (lastLf >= 0) {
    const tail = head.substring(lastLf + 1);
    head = head.substring(0, lastLf + 1);
    if (head && !head.endsWith('\r\n')) head += '\r\n';
    head += tail;
  }
  return head + (whole < content.length ? base64.encode(content.subarray(whole)) : '');
}

function bodyOf(node: MimeNode, transferEncoding: string): string {
  const content = node.content;
  if (!content) return '';
  if (typeof content !== 'string') throw new Error('mime-serializer writes string content only');
  if (transferEncoding === 'quoted-printable') return quotedPrintable(Buffer.from(content, 'utf8'));
  if (transferEncoding === 'base64') return base64Body(Buffer.from(content, 'utf8'));
  return content;
}

/** `MimeNode#stream` for one node and its children, as a string (UTF-8 when written). */
function serializeNode(node: MimeNode, out: string[]): void {
  if ((node as unknown as { _raw: unknown })._raw) throw new Error('mime-serializer does not write raw nodes');
  const transferEncoding = node.getTransferEncoding();
  out.push(node.buildHeaders() + '\r\n\r\n');
  out.push(bodyOf(node, transferEncoding));
  if (!node.multipart) return;
  node.childNodes.forEach((child, i) => {
    out.push((i > 0 ? '\r\n' : '') + '--' + String(node.boundary) + '\r\n');
    serializeNode(child, out);
  });
  out.push('\r\n--' + String(node.boundary) + '--\r\n');
}

/** What `root.build()` would produce (including its last-newline rule), as text to be written as UTF-8. */
export function serializeMime(root: MimeNode): string {
  const out: string[] = [];
  serializeNode(root, out);
  let text = out.join('');
  // LastNewline: a message always ends with a line break.
  if (!text.endsWith('\n')) text += text.endsWith('\r') ? '\n' : '\r\n';
  return text;
}
