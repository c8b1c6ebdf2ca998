/** How a suppression entry and a bounce report read in the panel (docs/console.md §10.19). */
import type { BounceReport, Suppression, SuppressionImportResponse, SuppressionReason } from '@outbox/contract';

/** Why an address is on the list, in the operator's words (the server's reasons: docs/bounces.md). */
export const REASON_LABELS: Record<SuppressionReason, string> = {
  hard_bounce: 'Hard bounce',
  rcpt_refused: 'Refused at RCPT (no such address)',
  complaint: 'Complaint',
  manual: 'Added by hand',
};

/** 'operator:kim' → 'kim'; 'bounces', 'cli' and 'worker:…' stay as they are. */
export function addedByText(entry: Suppression): string {
  return entry.createdBy.startsWith('operator:') ? entry.createdBy.slice('operator:'.length) : entry.createdBy;
}

/** "2 added, 1 updated, 1 refused." — what an import did, in one line for the status region. */
export function importOutcomeText(result: SuppressionImportResponse): string {
  return `Import done: ${result.added} added, ${result.updated} updated, ${result.refused.length} refused.`;
}

const KIND_LABELS: Record<BounceReport['kind'], string> = {
  dsn: 'Delivery report',
  arf: 'Complaint',
  unknown: 'Unreadable',
};

export function reportKindText(report: BounceReport): string {
  return KIND_LABELS[report.kind];
}

/** What was read in a report: "jo@example.com 5.1.1 failed", the complaint's type, or why it could not be read. */
export function reportContentText(report: BounceReport): string {
  const { summary } = report;
  if (summary.problem) return summary.problem;
  if (summary.feedback) {
    const who = summary.feedback.recipients.join(', ');
    return `${summary.feedback.type}${who ? ` from ${who}` : ''}`;
  }
  return summary.recipients.map((r) => `${r.recipient} ${r.status} ${r.action}`).join('; ');
}
