/**
 * Whether a submission needs to look at the suppression list at all. Most installations have an empty list,
 * and intake must not pay a query per group for nothing (the check costs at most 5 % of intake): an
 * empty list is remembered for REFRESH_MS, and any change made in this process (an operator's add or import,
 * the worker's RCPT refusal) says so at once. A row added by another process is seen within REFRESH_MS.
 * One per store, so the API, the submission service and the worker of a process share it.
 */
import type { DbOrTrx, Store } from '../store/connection.js';
import { hasAnySuppression } from './suppression.repository.js';

export const REFRESH_MS = 5000;

export interface SuppressionCheck {
  /** false only when the list is known to be empty. */
  mayHaveAny(db?: DbOrTrx): Promise<boolean>;
  /** Call after adding: the next submission checks. */
  added(): void;
  /** Call after removing: the next submission counts again. */
  removed(): void;
}

const checks = new WeakMap<Store, SuppressionCheck>();

export function suppressionCheckFor(store: Store): SuppressionCheck {
  let check = checks.get(store);
  if (!check) {
    check = createSuppressionCheck(store);
    checks.set(store, check);
  }
  return check;
}

function createSuppressionCheck(store: Store): SuppressionCheck {
  let known: boolean | null = null;
  let checkedAt = 0;
  // A change made while a count was under way wins over that count's (older) answer.
  let generation = 0;
  return {
    async mayHaveAny(db = store.db) {
      // Real time, not the app's clock: this is a cache's age, and tests move their clock by days.
      const now = Date.now();
      if (known !== null && now - checkedAt < REFRESH_MS) return known;
      const started = generation;
      const any = await hasAnySuppression(db);
      if (started !== generation) return true;
      known = any;
      checkedAt = now;
      return any;
    },
    added() {
      generation += 1;
      known = true;
      checkedAt = Date.now();
    },
    removed() {
      generation += 1;
      known = null;
    },
  };
}
