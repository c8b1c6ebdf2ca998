/**
 * What a live event does to what the console holds (docs/console.md: live updates), as pure functions so they
 * are tested alone. Rows on screen change in place (status, dates: the row's button follows its status);
 * rows never appear or go by themselves, so nothing moves under the pointer:
 * - a new mail that would enter the view is counted for the "N new — show" banner instead;
 * - a row whose mail left the view's filter, or was deleted elsewhere, stays (updated, or as it was) until
 *   the list is next loaded (a page change, "show", an action, the window regaining focus).
 */
import type { LiveMail, Mail, MailDetail, MailListResponse } from '@outbox/contract';
import type { MailListParams } from '../api/list-mails';

/** The rows of one cached page with the changes applied; the same object when none of its rows changed. */
export function applyMailChanges(list: MailListResponse, changes: ReadonlyMap<number, LiveMail>): MailListResponse {
  let changed = false;
  const data = list.data.map((mail) => {
    const next = changes.get(mail.id);
    if (!next || next.status === null) return mail;
    if (next.status === mail.status && next.lastUpdate === mail.lastUpdate && next.providerSentDate === mail.providerSentDate) return mail;
    changed = true;
    return { ...mail, status: next.status, lastUpdate: next.lastUpdate, providerSentDate: next.providerSentDate };
  });
  return changed ? { ...list, data } : list;
}

export function applyDetailChange(detail: MailDetail, next: LiveMail): MailDetail {
  if (next.status === null) return detail;
  return { ...detail, status: next.status, lastUpdate: next.lastUpdate, providerSentDate: next.providerSentDate };
}

/**
 * The counters over the whole store (the status chips), and the total where it is the sum of counters (no
 * search, no date range, no application: those totals are counted by the list call and stay until it runs again; and not
 * for an answer without counters, which a server that does not keep them sends).
 */
export function applyCounts(list: MailListResponse, params: MailListParams, counts: Record<string, number>): MailListResponse {
  // Only where the list answer itself came with the counters (a server that keeps them, as the stream's does).
  const hasCounters = Object.keys(list.meta.counts ?? {}).length > 0;
  const countedExactly =
    hasCounters &&
    params.q === '' &&
    params.receivedFrom === null &&
    params.receivedTo === null &&
    params.application === null &&
    !list.meta.totalIsLowerBound;
  const total = countedExactly
    ? Object.entries(counts).reduce(
        (sum, [code, n]) => (params.statuses.length === 0 || params.statuses.includes(Number(code)) ? sum + n : sum),
        0,
      )
    : list.meta.total;
  return { ...list, meta: { ...list.meta, counts: { ...list.meta.counts, ...counts }, total } };
}

/**
 * Whether a new mail belongs to the view's filter, as far as its status and dates tell. A search cannot be
 * checked here (the event has no text), nor an application (nor its key): with either, every new mail of the
 * right status and dates counts, and "show" loads what really matches.
 */
export function matchesView(params: MailListParams, mail: LiveMail): boolean {
  if (mail.status === null) return false;
  if (params.statuses.length > 0 && !params.statuses.includes(mail.status)) return false;
  const received = mail.receivedDate === null ? NaN : Date.parse(mail.receivedDate);
  if (params.receivedFrom !== null && !(received >= Date.parse(params.receivedFrom))) return false;
  if (params.receivedTo !== null && !(received < Date.parse(params.receivedTo))) return false;
  return true;
}

export const isFailure = (status: number | null) => status === 4 || status === 5;

export type { Mail };
