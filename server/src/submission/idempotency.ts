/**
 * Which prepared mails of a commit group become new rows and which stand for another mail (docs/api.md):
 * a key already stored for that API key answers with the stored mail; the same key twice in the group (one
 * batch, or two requests committed together) is one mail, the first. Pure: the stored keys are looked up
 * by the caller (idempotency.repository.ts).
 */
import type { PreparedMail } from './submission-preparation.js';

export interface IdempotencyPlan<M extends { prepared: PreparedMail }> {
  /** The mails to insert, in order. */
  fresh: M[];
  /** A mail that is not inserted, and the one it stands for: a stored id, or a fresh mail of the group. */
  standsFor: Map<PreparedMail, PreparedMail | number>;
}

/** `stored` maps `keyOf(apiKeyId, key)` to the stored mail id. */
export function planIdempotency<M extends { prepared: PreparedMail; apiKeyId: number }>(
  mails: readonly M[],
  stored: ReadonlyMap<string, number>,
): IdempotencyPlan<M> {
  const fresh: M[] = [];
  const firstWithKey = new Map<string, PreparedMail>();
  const standsFor = new Map<PreparedMail, PreparedMail | number>();
  for (const mail of mails) {
    const { idempotencyKey } = mail.prepared;
    if (idempotencyKey !== null) {
      const key = keyOf(mail.apiKeyId, idempotencyKey);
      const earlier = stored.get(key) ?? firstWithKey.get(key);
      if (earlier !== undefined) {
        standsFor.set(mail.prepared, earlier);
        continue;
      }
      firstWithKey.set(key, mail.prepared);
    }
    fresh.push(mail);
  }
  return { fresh, standsFor };
}

/** One string per (API key, idempotency key). */
export const keyOf = (apiKeyId: number, key: string): string => `${apiKeyId}\u0000${key}`;
