/**
 * Bulk actions: dequeue, delete or requeue many mails, named by ids or by the list's
 * filter. Every mail moves by the same conditional transition as the one-mail action (lifecycle.ts through
 * `applyTransitions`), so a worker claiming at the same moment wins or loses cleanly; a mail that does not
 * move is reported under the status it is in (or `not_found`), never silently dropped.
 * - ids: one transaction for the moves and the audit entry; all or nothing on a store failure.
 * - filter: walked by id in chunks sized to take ~40 ms (at most FILTER_CHUNK), one short transaction each,
 *   with a pause as long as the chunk after each, so delivery (which commits between our chunks) is never held
 *   up for long. The walk stops at the highest id that existed when the
 *   action began: mails accepted meanwhile were not seen by the operator and are left alone. Refused before
 *   anything moves when the filter now matches far more than the operator saw (`countLimit`).
 * - dryRun: the same walk and the same refusal, reading statuses instead of moving them, and no audit entry.
 *   The console asks it before its confirmation ("48 Queued will move, 2 Processing will be skipped"); a
 *   worker may take a mail between the two calls, and the real answer then says so.
 */
import {
  MAX_SKIPPED_IDS_LISTED,
  REQUEUEABLE_STATUSES,
  STATUSES,
  type MailStatusCode,
  type BulkAction,
  type BulkFilter,
  type BulkMoving,
  type BulkResult,
  type BulkSkipped,
} from '@outbox/contract';
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { badRequest, conflict } from '../errors.js';
import type { DbOrTrx, Store } from '../store/connection.js';
import { deleteTransition, dequeueTransition, requeueTransition } from './lifecycle.js';
import * as listRepo from '../list/list-matches.repository.js';
import { findContentRemoved } from './content-retention.repository.js';
import * as repo from './mail.repository.js';
import { applyTransitions, findStatuses } from './write/apply.js';
import type { Transition } from './transition-types.js';

/** The most mails per transaction of a filter action. */
export const FILTER_CHUNK = 500;
const FIRST_CHUNK = 100;
const MIN_CHUNK = 10;
/**
 * A filter action's chunks are sized to take about this long, and after each one the action waits as long as
 * the chunk took (at most MAX_PAUSE_MS): delivery and intake get at least half of the time, and on SQLite
 * (one writer, statements that hold the event loop) no delivery waits much longer than one chunk.
 * Measured with bench/bulk.ts: 500-mail chunks with only a setImmediate between them stalled delivery
 * for seconds on a busy machine.
 */
const CHUNK_TARGET_MS = 40;
const MAX_PAUSE_MS = 250;

/** The next chunk size from the last one and how long it took: towards CHUNK_TARGET_MS, within bounds. */
export function nextChunkSize(size: number, tookMs: number): number {
  const scaled = Math.round((size * CHUNK_TARGET_MS) / Math.max(1, tookMs));
  return Math.max(MIN_CHUNK, Math.min(FILTER_CHUNK, scaled, size * 2));
}

/**
 * The most mails a filter action may find when the operator saw `expectedCount`: 10 % more plus 10.
 * Mails keep arriving while an operator reads and confirms, so a little growth is normal; 120 becoming
 * 5,000 means the filter now says something else than what was confirmed.
 */
export function countLimit(expectedCount: number): number {
  return Math.floor(expectedCount * 1.1) + 10;
}

export type BulkInput = ({ action: BulkAction; ids: number[] } | { action: BulkAction; filter: BulkFilter; expectedCount: number }) & {
  dryRun?: boolean;
};

export interface BulkActionsDeps {
  store: Store;
  clock: Clock;
  notify(change: { type: 'queued' | 'updated' | 'deleted'; ids: number[] }): void;
}

/** The skip reason of a mail a requeue refuses because content retention removed its message. */
export const CONTENT_REMOVED = 'content_removed';

const CHANGE_TYPE = { dequeue: 'updated', requeue: 'queued', delete: 'deleted' } as const;

/** `ProviderSent` → `provider_sent`: the skip reason of a mail in that status. */
function reasonOf(status: number | undefined): string {
  const name = status === undefined ? undefined : STATUSES[status]?.name;
  if (name === undefined) return 'not_found';
  return name.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}

function transitionFor(action: BulkAction, id: number, at: number, actor: string): Transition {
  if (action === 'dequeue') return dequeueTransition(id, at, actor);
  if (action === 'requeue') return requeueTransition(id, at, actor);
  return deleteTransition(id, undefined, { at, actor });
}

/** Skips gathered across chunks: exact counts, the first ids of each reason. */
class Outcome {
  done = 0;
  private readonly skipped = new Map<string, { count: number; ids: number[] }>();
  /** Dry run only: would-move counts per current status. */
  private readonly moving = new Map<string, number>();

  wouldMove(reason: string): void {
    this.done++;
    this.moving.set(reason, (this.moving.get(reason) ?? 0) + 1);
  }

  skip(reason: string, id: number): void {
    const entry = this.skipped.get(reason) ?? { count: 0, ids: [] };
    entry.count++;
    if (entry.ids.length < MAX_SKIPPED_IDS_LISTED) entry.ids.push(id);
    this.skipped.set(reason, entry);
  }

  result(action: BulkAction): BulkResult {
    const skipped: BulkSkipped[] = [...this.skipped].map(([reason, { count, ids }]) => ({ reason, count, ids }));
    skipped.sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
    return { action, done: this.done, skipped };
  }

  preview(action: BulkAction): BulkResult {
    const moving: BulkMoving[] = [...this.moving].map(([reason, count]) => ({ reason, count }));
    moving.sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
    return { ...this.result(action), dryRun: true, moving };
  }
}

/** The list's filter fields, read as the list reads them (q trimmed and lower-cased; dates as instants). */
function toMailFilter(filter: BulkFilter): listRepo.MailFilter {
  const statuses = filter.status ? [...new Set(filter.status.split(',').map(Number))] : undefined;
  const search = filter.q?.trim().toLowerCase() || undefined;
  const receivedFrom = filter.receivedFrom !== undefined ? Date.parse(filter.receivedFrom) : undefined;
  const receivedTo = filter.receivedTo !== undefined ? Date.parse(filter.receivedTo) : undefined;
  if (receivedFrom !== undefined && receivedTo !== undefined && receivedFrom >= receivedTo) {
    throw badRequest('invalid_date_range', 'body.filter.receivedTo must be later than body.filter.receivedFrom.');
  }
  return { statuses, search, receivedFrom, receivedTo };
}

export function createBulkActions({ store, clock, notify }: BulkActionsDeps) {
  const { db } = store;

  /** Moves what may move of `ids` and records the rest in `outcome`, in the caller's transaction. */
  async function moveChunk(trx: DbOrTrx, action: BulkAction, ids: number[], actor: string, outcome: Outcome): Promise<number[]> {
    const at = clock.now();
    const { moved, missed } = await applyTransitions(
      trx,
      ids.map((id) => transitionFor(action, id, at, actor)),
    );
    outcome.done += moved.length;
    if (missed.length > 0) {
      const statuses = await findStatuses(trx, missed);
      const removed = await contentRemovedAmong(trx, action, missed);
      for (const id of missed) outcome.skip(removed.has(id) ? CONTENT_REMOVED : reasonOf(statuses.get(id)), id);
    }
    return moved.map((m) => m.id);
  }

  /**
   * Of `ids`, those a requeue refuses because content retention removed their message although their status
   * allows it (`content_removed` rather than their status as the skip reason); none for the other actions.
   */
  async function contentRemovedAmong(trx: DbOrTrx, action: BulkAction, ids: number[]): Promise<Set<number>> {
    if (action !== 'requeue') return new Set();
    const statuses = await findStatuses(trx, ids);
    const removed = await findContentRemoved(trx, ids);
    return new Set(ids.filter((id) => removed.has(id) && REQUEUEABLE_STATUSES.includes(statuses.get(id) as MailStatusCode)));
  }

  /** What moveChunk would do to `ids` now, moving nothing. */
  async function previewChunk(action: BulkAction, ids: number[], outcome: Outcome): Promise<void> {
    const statuses = await findStatuses(db, ids);
    const removed = await contentRemovedAmong(db, action, ids);
    for (const id of ids) {
      const status = statuses.get(id);
      const { from } = transitionFor(action, id, 0, '');
      if (removed.has(id)) outcome.skip(CONTENT_REMOVED, id);
      else if (status !== undefined && from !== null && (from as readonly number[]).includes(status)) outcome.wouldMove(reasonOf(status));
      else outcome.skip(reasonOf(status), id);
    }
  }

  async function byIds(action: BulkAction, ids: number[], actor: string, dryRun: boolean): Promise<BulkResult> {
    if (dryRun) {
      const outcome = new Outcome();
      await previewChunk(action, ids, outcome);
      return outcome.preview(action);
    }
    const outcome = new Outcome();
    const moved = await db.transaction().execute(async (trx) => {
      const movedIds = await moveChunk(trx, action, ids, actor, outcome);
      const result = outcome.result(action);
      await insertAuditEntries(trx, [
        {
          at: clock.now(),
          actor,
          action: `mail.bulk.${action}`,
          target: `${ids.length} mails`,
          before: { ids },
          after: { done: result.done, skipped: result.skipped },
        },
      ]);
      return movedIds;
    });
    if (moved.length > 0) notify({ type: CHANGE_TYPE[action], ids: moved });
    return outcome.result(action);
  }

  async function byFilter(
    action: BulkAction,
    filter: BulkFilter,
    expectedCount: number,
    actor: string,
    dryRun: boolean,
  ): Promise<BulkResult> {
    const mailFilter = toMailFilter(filter);
    const limit = countLimit(expectedCount);
    // Counting stops one past the limit: cheap however large the filter has grown.
    const matching = await listRepo.countMailRowsUpTo(db, mailFilter, limit + 1);
    if (matching > limit) {
      throw conflict(
        'count_changed',
        `The filter now matches more than ${limit} mails; body.expectedCount was ${expectedCount}. Nothing was changed: look at the list again and confirm the new count.`,
      );
    }
    const maxId = await repo.findMaxMailId(db);
    const outcome = new Outcome();
    let after = 0;
    let size = FIRST_CHUNK;
    // Bounded: every round moves `after` forward, and ids stop at maxId.
    for (;;) {
      // Pacing is wall time on purpose (performance.now, not the Clock): it shares this process, not a rule.
      const started = performance.now();
      const ids = await listRepo.listMatchingIds(db, mailFilter, after, maxId, size);
      if (ids.length === 0) break;
      after = ids.at(-1)!;
      if (dryRun) {
        await previewChunk(action, ids, outcome);
      } else {
        const moved = await db.transaction().execute((trx) => moveChunk(trx, action, ids, actor, outcome));
        if (moved.length > 0) notify({ type: CHANGE_TYPE[action], ids: moved });
      }
      const took = performance.now() - started;
      size = nextChunkSize(size, took);
      // Let the worker's and intake's work run between chunks (one SQLite writer at a time): see CHUNK_TARGET_MS.
      await new Promise((resolve) => setTimeout(resolve, Math.min(MAX_PAUSE_MS, took)));
    }
    if (dryRun) return outcome.preview(action);
    const result = outcome.result(action);
    await insertAuditEntries(db, [
      {
        at: clock.now(),
        actor,
        action: `mail.bulk.${action}`,
        target: 'filter',
        before: { filter, expectedCount },
        after: { done: result.done, skipped: result.skipped },
      },
    ]);
    return result;
  }

  /** One bulk action, by ids or by filter; see the module comment. */
  async function bulkAction(input: BulkInput, actor: string): Promise<BulkResult> {
    const dryRun = input.dryRun === true;
    return 'ids' in input
      ? byIds(input.action, input.ids, actor, dryRun)
      : byFilter(input.action, input.filter, input.expectedCount, actor, dryRun);
  }

  return { bulkAction };
}
