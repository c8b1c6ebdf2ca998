/**
 * What a schema cannot say about a JSON submission (docs/api.md): header-safe names and subject, valid
 * addresses, usable custom headers. Pure; the HTTP layer calls it per mail to name the first bad field of
 * a batch, and the submission service calls it again before building anything.
 */
import type { SubmitMailRequest } from '@outbox/contract';
import { checkMessageInput } from './message-builder.js';
import { readSendAt } from './scheduled-send.js';

/** Values that become header text: a CR or LF would end the header line (injection); NUL no MTA takes. */
function singleLineProblems(field: string, value: string | undefined): string[] {
  if (value === undefined) return [];
  if (/[\r\n]/.test(value)) return [`${field} must not contain CR or LF`];
  if (value.includes('\0')) return [`${field} must not contain NUL`];
  return [];
}

/**
 * A body is sent 7bit when it is plain ASCII, CR bytes included, and the line-ending step keeps a CR
 * without LF as it is: `x\r.\r\n` would reach the relay as `<CR>.<CR><LF>`, the SMTP smuggling shape
 * the SMTP listener itself refuses. Refused rather than rewritten, so the stored bytes stay what the
 * submitter meant (docs/api.md).
 */
function bareCrProblems(field: string, value: string | undefined): string[] {
  if (value === undefined || !/\r(?!\n)/.test(value)) return [];
  return [`${field} must not contain a bare CR (a CR not followed by LF); end lines with LF or CRLF`];
}

/** The form of `sendAt`; how far ahead it lies is checked at acceptance, against the store's clock. */
function sendAtFormProblems(value: string | undefined): string[] {
  const reading = readSendAt(value, { field: 'sendAt' });
  return reading.ok ? [] : [reading.problem];
}

/**
 * One sentence per problem, naming the field relative to the mail (`to[0].recipientMail`), so the HTTP
 * layer can say where in the body it is. Empty when the mail can be built.
 */
export function submissionProblems(input: SubmitMailRequest): string[] {
  return [
    ...singleLineProblems('fromName', input.fromName),
    ...singleLineProblems('subject', input.subject),
    ...bareCrProblems('text', input.text),
    ...bareCrProblems('html', input.html),
    ...(['to', 'cc', 'bcc'] as const).flatMap((kind) =>
      (input[kind] ?? []).flatMap((r, i) => singleLineProblems(`${kind}[${i}].recipientName`, r.recipientName)),
    ),
    ...checkMessageInput(input),
    ...sendAtFormProblems(input.sendAt),
  ];
}
