/**
 * How much of a report is kept (docs/bounces.md#limits). The bounce listener takes mail from strangers: anyone who
 * received a mail saw its return path, and may send reports to it, each up to 1 MiB. What a report copies into
 * the store is therefore capped field by field, so that a report costs at most a few KiB wherever it is copied
 * (the summary, the mail event, the application event, the recipient's reply, the suppression, the provider
 * reply), and the raw bytes are kept only up to RAW_KEPT_BYTES.
 */

/** A Diagnostic-Code (or any free-text field of a report) as copied anywhere. */
export const DIAGNOSTIC_MAX_BYTES = 1024;
/** Short fields: Action, Feedback-Type, a recipient address, a Message-ID, the User-Agent. */
export const SHORT_FIELD_MAX_BYTES = 256;
/** Per-recipient blocks of a DSN (and complaining recipients of an ARF) read from one report. */
export const MAX_REPORT_RECIPIENTS = 100;
/** The raw report kept for `GET /api/v1/bounces/{id}/raw`; the parsed fields are read from the whole report first. */
export const RAW_KEPT_BYTES = 64 * 1024;

/**
 * The text cut to at most `maxBytes` bytes of UTF-8, ending in a marker that says so and how long it was:
 * `… [truncated: 1048576 bytes in all]`. Never cuts a character in two.
 */
export function capText(text: string, maxBytes: number = DIAGNOSTIC_MAX_BYTES): string {
  const size = Buffer.byteLength(text, 'utf8');
  if (size <= maxBytes) return text;
  const marker = ` … [truncated: ${size} bytes in all]`;
  const room = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'));
  let kept = Buffer.from(text, 'utf8').subarray(0, room).toString('utf8');
  // A character cut in two decodes as U+FFFD at the end; drop it rather than keep a false character.
  if (kept.endsWith('\uFFFD') && !text.startsWith(kept)) kept = kept.slice(0, -1);
  while (Buffer.byteLength(kept + marker, 'utf8') > maxBytes) kept = kept.slice(0, -1);
  return kept + marker;
}

export function capNullable(text: string | null, maxBytes?: number): string | null {
  return text === null ? null : capText(text, maxBytes);
}
