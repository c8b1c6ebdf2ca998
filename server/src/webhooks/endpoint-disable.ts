/**
 * The disable policy (docs/webhooks.md#answers-retries-and-disabling), in the transaction that records a group
 * of attempts: each endpoint's failing streak, and the disables (a 410 Gone, or every attempt failing for
 * `FAILING_DISABLE_AFTER_MS`) with their audit entries.
 */
import type { Transaction } from 'kysely';
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Database } from '../store/schema.js';
import { FAILING_DISABLE_AFTER_MS } from './webhook-policy.js';
import type { AttemptOutcome } from './webhook-dispatch.repository.js';
import * as repo from './webhook.repository.js';

export interface DisabledEndpoint {
  id: number;
  reason: 'gone' | 'failing';
}

/** `outcomes` in the order the answers came; `goneIds`: endpoints that answered 410 among them. */
export async function applyDisablePolicy(
  trx: Transaction<Database>,
  outcomes: readonly AttemptOutcome[],
  goneIds: readonly number[],
  now: number,
): Promise<DisabledEndpoint[]> {
  // Per endpoint, in the order the answers came: a success ends a failing streak; the first failure
  // after the last success (or with none in this batch) starts one.
  const succeeded = new Set<number>();
  const failed = new Map<number, number>();
  for (const outcome of outcomes) {
    if (outcome.succeeded) {
      succeeded.add(outcome.endpointId);
      failed.delete(outcome.endpointId);
    } else if (!failed.has(outcome.endpointId)) failed.set(outcome.endpointId, outcome.at);
  }
  await repo.clearFailing(
    trx,
    [...succeeded].filter((id) => !failed.has(id)),
  );
  for (const [endpointId, at] of failed) {
    if (succeeded.has(endpointId)) await repo.restartFailing(trx, endpointId, at);
    else await repo.markFailing(trx, [endpointId], at);
  }
  const changes: DisabledEndpoint[] = [];
  for (const endpointId of goneIds)
    if (await repo.disableEndpoint(trx, endpointId, 'gone', now)) changes.push({ id: endpointId, reason: 'gone' });
  for (const endpointId of failed.keys()) {
    if (await repo.disableEndpoint(trx, endpointId, 'failing', now, now - FAILING_DISABLE_AFTER_MS))
      changes.push({ id: endpointId, reason: 'failing' });
  }
  if (changes.length > 0) {
    await insertAuditEntries(
      trx,
      changes.map((change) => ({
        at: now,
        actor: 'system',
        action: 'webhook.disable',
        target: `webhook:${change.id}`,
        after: { enabled: false, disabledReason: change.reason },
      })),
    );
  }
  return changes;
}

/** The log line of a disable. */
export function describeDisable(reason: DisabledEndpoint['reason']): string {
  return reason === 'gone' ? 'webhook endpoint answered 410 Gone: disabled' : 'webhook endpoint failing for 5 days: disabled';
}
