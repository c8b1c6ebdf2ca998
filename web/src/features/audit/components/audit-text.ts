/** How an audit entry reads in the panel (docs/console.md §10): who, what, to which mails, with what outcome. */
import type { AuditEntry } from '@outbox/contract';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** 'operator:kim' → 'kim'; 'client:10.0.0.7' (a failed login), 'cli' and 'system' stay as they are. */
export function operatorOf(actor: string): string {
  return actor.startsWith('operator:') ? actor.slice('operator:'.length) : actor;
}

const SHOWN_IDS = 5;

/** The mails (or other target) an entry is about: "#12", "6 mails: #1, #2, #3, #4, #5 …", "filter status=4,5 (saw 120)". */
export function targetText(entry: AuditEntry): string {
  const before = isRecord(entry.before) ? entry.before : {};
  if (Array.isArray(before.ids)) {
    const ids = before.ids as number[];
    const shown = ids.slice(0, SHOWN_IDS).map((id) => `#${id}`);
    return `${ids.length} ${ids.length === 1 ? 'mail' : 'mails'}: ${shown.join(', ')}${ids.length > SHOWN_IDS ? ' …' : ''}`;
  }
  if (isRecord(before.filter)) {
    const parts = Object.entries(before.filter).map(([name, value]) => `${name}=${String(value)}`);
    const saw = typeof before.expectedCount === 'number' ? ` (saw ${before.expectedCount.toLocaleString('en-US')})` : '';
    return `filter ${parts.length > 0 ? parts.join(' ') : '(all mails)'}${saw}`;
  }
  const target = entry.target ?? '';
  return target.startsWith('mail:') ? `#${target.slice('mail:'.length)}` : target;
}

/** The outcome: "48 done · 2 skipped (processing 2)", "Queued → Dequeued", "ProviderSent → deleted", or ''. */
export function outcomeText(entry: AuditEntry): string {
  const before = isRecord(entry.before) ? entry.before : {};
  const after = isRecord(entry.after) ? entry.after : null;
  if (after && typeof after.done === 'number' && Array.isArray(after.skipped)) {
    const skipped = after.skipped.filter(isRecord);
    const total = skipped.reduce((sum, s) => sum + (typeof s.count === 'number' ? s.count : 0), 0);
    const reasons = skipped.map((s) => `${String(s.reason)} ${String(s.count)}`).join(', ');
    return `${after.done} done${total > 0 ? ` · ${total} skipped (${reasons})` : ''}`;
  }
  if (typeof before.status === 'string')
    return `${before.status} → ${after && typeof after.status === 'string' ? after.status : 'deleted'}`;
  if (entry.action === 'login.failed') return 'refused';
  return '';
}
