/**
 * Scheduled sends (docs/api.md#scheduled-sends): `sendAt` over HTTP, the header X-Outbox-Send-At over SMTP. The mail is
 * accepted Queued and due at that instant; until then it waits like any Queued mail, and Dequeue cancels it. Pure:
 * the caller gives the time of acceptance.
 */
import { MAX_SCHEDULE_DAYS } from '@outbox/contract';

const DAY_MS = 86_400_000;

/** ISO 8601 / RFC 3339 date-time with a zone: a date alone or a local time would be read in the server's zone. */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})$/;
/** RFC 5322 §3.3 date-time (`Thu, 24 Dec 2026 08:00:00 +0100`, day name optional), the form a mail client writes. */
const RFC5322_DATE_TIME = /^([A-Za-z]{3},\s*)?\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{2}:\d{2}(:\d{2})?\s+([+-]\d{4}|UT|GMT|[A-Z]{1,3})$/;

export type SendAtReading = { ok: true; at: number | null } | { ok: false; problem: string };

/**
 * Reads a requested send time. `at` is null when none was asked for or the instant is not ahead of `now` (it is sent
 * at once, as an unscheduled mail); without `now` only the form is checked (the HTTP layer, which has no clock of
 * its own, names the field; the submission service checks the range). `field` names it in the problem.
 */
export function readSendAt(
  value: string | undefined,
  { now, field, headerForm = false }: { now?: number | undefined; field: string; headerForm?: boolean },
): SendAtReading {
  if (value === undefined) return { ok: true, at: null };
  const text = value.trim();
  const wellFormed = ISO_DATE_TIME.test(text) || (headerForm && RFC5322_DATE_TIME.test(text));
  const at = wellFormed ? Date.parse(text.replace(/^(\d{4}-\d{2}-\d{2}) /, '$1T')) : NaN;
  if (!Number.isFinite(at)) {
    const forms = headerForm ? 'an ISO 8601 date-time with a zone or an RFC 5322 date' : 'an ISO 8601 date-time with a zone';
    return { ok: false, problem: `${field} must be ${forms}, e.g. 2026-12-24T08:00:00Z` };
  }
  if (now === undefined) return { ok: true, at };
  const latest = now + MAX_SCHEDULE_DAYS * DAY_MS;
  if (at > latest) {
    return {
      ok: false,
      problem: `${field} is more than ${MAX_SCHEDULE_DAYS} days ahead; the latest accepted now is ${new Date(latest).toISOString()}`,
    };
  }
  return { ok: true, at: at > now ? at : null };
}
