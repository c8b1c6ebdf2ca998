/**
 * The rates of the alert rules (alert-rules.ts), the queue health and the statistics (GET /api/v1/stats): one
 * function each, so a chart and an alert never disagree on what a rate is. Pure; each caller counts its inputs
 * (the alert rules over their window, the statistics from their counters).
 */

/** Failed / (failed + delivered): the share of finished delivery attempts that failed; null when neither happened. */
export function failureRate(failed: number, delivered: number): number | null {
  const attempts = failed + delivered;
  return attempts === 0 ? null : failed / attempts;
}

/** Bounces and complaints per mail sent; null when nothing was sent. */
export function bounceRate(bouncesAndComplaints: number, sent: number): number | null {
  return sent === 0 ? null : bouncesAndComplaints / sent;
}

/** Complaints per mail sent; null when nothing was sent. */
export function complaintRate(complaints: number, sent: number): number | null {
  return sent === 0 ? null : complaints / sent;
}
