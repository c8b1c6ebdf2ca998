/**
 * The words of the bulk bar, its confirmation and its outcome line (docs/console.md §10), kept pure so a unit
 * test reads them: "48 dequeued · 2 skipped: already Processing".
 */
import { DELETABLE_STATUSES, MailStatus, REQUEUEABLE_STATUSES, STATUSES } from '@outbox/contract/status';
import type { BulkAction, BulkResult } from '@outbox/contract';

export const ACTION_LABEL: Record<BulkAction, string> = { dequeue: 'Dequeue', requeue: 'Requeue', delete: 'Delete' };
const PAST: Record<BulkAction, string> = { dequeue: 'dequeued', requeue: 'requeued', delete: 'deleted' };

/** The statuses each action moves mails from (the one-mail rules, docs/lifecycle.md). */
export const ACTION_FROM: Record<BulkAction, readonly number[]> = {
  dequeue: [MailStatus.Queued],
  requeue: REQUEUEABLE_STATUSES,
  delete: DELETABLE_STATUSES,
};

/** The actions, in bar order, that some of `statuses` allow. */
export function actionsFor(statuses: Iterable<number>): BulkAction[] {
  const present = new Set(statuses);
  return (['dequeue', 'requeue', 'delete'] as const).filter((action) => ACTION_FROM[action].some((status) => present.has(status)));
}

/** 'provider_error' → 'ProviderError' (the status names the console shows everywhere); 'not_found' → 'not found'. */
export function statusNameOf(reason: string): string {
  const info = STATUSES.find((status) => status.name.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase() === reason);
  return info ? info.name : reason.replace(/_/g, ' ');
}

/** Why a mail did not move, as the operator reads it: it is already (or still) in another status. */
function reasonText(action: BulkAction, reason: string): string {
  if (reason === 'not_found') return 'no longer exists';
  // A requeue of a mail whose message content retention removed (docs/operations.md#content-retention).
  if (reason === 'content_removed') return 'content removed';
  const name = statusNameOf(reason);
  const still = action !== 'dequeue' && (reason === 'queued' || reason === 'processing');
  return `${still ? 'still' : 'already'} ${name}`;
}

export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

export function skippedCount(skipped: BulkResult['skipped']): number {
  return skipped.reduce((sum, s) => sum + s.count, 0);
}

/** "already Processing" (one reason) or "3 already Processing, 2 already ProviderSent". */
export function skipReasons(action: BulkAction, skipped: BulkResult['skipped']): string {
  if (skipped.length === 1) return reasonText(action, skipped[0]!.reason);
  return skipped.map((s) => `${formatCount(s.count)} ${reasonText(action, s.reason)}`).join(', ');
}

/** "2 skipped: already Processing" or "5 skipped: 3 already Processing, 2 already ProviderSent"; '' when none. */
export function skippedText(action: BulkAction, skipped: BulkResult['skipped']): string {
  const total = skippedCount(skipped);
  return total === 0 ? '' : `${formatCount(total)} skipped: ${skipReasons(action, skipped)}`;
}

/** The outcome line after a bulk action: "48 dequeued · 2 skipped: already Processing". */
export function outcomeText(result: BulkResult): string {
  const skipped = skippedText(result.action, result.skipped);
  return [`${formatCount(result.done)} ${PAST[result.action]}`, skipped].filter(Boolean).join(' · ');
}

/** "48 Queued" or "3 Dequeued, 2 ProviderError": what a dry run says will move. */
export function movingText(moving: NonNullable<BulkResult['moving']>): string {
  return moving.map((m) => `${formatCount(m.count)} ${statusNameOf(m.reason)}`).join(', ');
}

/** "1 mail" / "12,345 mails". */
export function mailsText(count: number): string {
  return `${formatCount(count)} ${count === 1 ? 'mail' : 'mails'}`;
}
