/**
 * What a status transition is (the types `applyTransitions` in write/apply.ts takes and returns).
 * Pure types, so the lifecycle's builders (lifecycle.ts, delivery/outcome-policy.ts, delivery/lease-transitions.ts)
 * depend on no SQL.
 */
import type { MailEventType, MailStatusCode } from '@outbox/contract';
import type { EventRecipient } from '../events/application-event-data.js';
import type { MailView } from './leases.js';
import type { StatisticsMoves } from '../statistics/statistics-moves.js';

export interface TransitionEvent {
  type: MailEventType;
  /** Who made it happen: `operator:NAME`, `worker:ID`, `sweeper:ID`, `api-key:NAME`, `smtp:NAME`, `demo`. */
  actor: string;
  detail?: Record<string, unknown> | undefined;
}

/** Columns that change with the status. Left out: unchanged. */
export interface TransitionChanges {
  providerReply?: string | undefined;
  nextAttemptAt?: number | undefined;
  providerSentAt?: number | undefined;
  /** Recipients refused for good so far (`mails.rejected_recipients`), set with a delivery outcome. */
  rejectedRecipients?: number | undefined;
  /** A number sets it (a requeue's fresh budget); `increment` counts an attempt (a claim). */
  attempts?: number | 'increment' | undefined;
  /** A new lease (a claim), or null to end the current one. */
  lease?: { owner: string; expiresAt: number } | null | undefined;
}

/** Extra conditions on the mail's lease, checked in the same UPDATE. */
export interface LeaseCondition {
  /** Only while this worker holds it. */
  owner?: string;
  /** Only while it is this claim's lease: with the owner it names the claim, so a stale claim cannot write. */
  expiresAt?: number | null;
  /** Only while the lease has run out by this instant (the sweeper; a late outcome then wins cleanly). */
  expiredBy?: number;
}

/** A mail in one of `from` moves to `to`. */
export interface StatusTransition {
  id: number;
  /** The statuses it may leave; the UPDATE is conditional on them. */
  from: readonly MailStatusCode[];
  to: MailStatusCode;
  at: number;
  /** null: no event row (a claim: the attempt is recorded by its outcome's event). */
  event: TransitionEvent | null;
  set?: TransitionChanges | undefined;
  lease?: LeaseCondition | undefined;
  /**
   * Only while the mail's content is kept (`content_removed_at` null, migration 025), checked in the same UPDATE
   * as the status: a requeue, which would send a message that is no longer stored.
   */
  withContent?: true | undefined;
}

/**
 * A mail in one of `from` is deleted with its recipients, content and events (so it gets no event row).
 * With an actor (an operator's delete) it makes a `mail.deleted` application event; without (retention), none.
 */
export interface DeleteTransition {
  id: number;
  from: readonly MailStatusCode[];
  to: 'deleted';
  at?: number | undefined;
  actor?: string | undefined;
}

/** How a mail comes into being (`insertMails`): the status it is stored in, when, and its event. */
export interface MailCreation {
  to: MailStatusCode;
  at: number;
  event: TransitionEvent | null;
}

/** A mail `insertMails` has just inserted in status `to`: its event and counter move, no UPDATE. */
export interface CreatedTransition extends MailCreation {
  id: number;
  from: null;
}

export type Transition = StatusTransition | DeleteTransition | CreatedTransition;

export interface MovedMail {
  id: number;
  from: MailStatusCode | null;
  to: MailStatusCode | 'deleted';
}

export interface AppliedTransitions {
  /** In the order the transitions were given. */
  moved: MovedMail[];
  /** Ids whose mail was not in an allowed status (or lease) or does not exist: the caller explains them. */
  missed: number[];
  /** With `returnRows`: each moved mail's row after the move (as it was, for a delete). */
  rows: Map<number, MailView>;
}

export interface ApplyOptions {
  returnRows?: boolean;
  /** false: no application events (the demo data, which is no application's mail). Default true. */
  applicationEvents?: boolean;
  /**
   * The counter moves are added here instead of written: a transaction that moves mails several times (the
   * worker's outcome commit, which claims the next batch too) writes them once, last and in status order,
   * with `moveStatusCounts`.
   */
  counts?: StatusCountMoves;
  /**
   * The hourly statistics' increments (statistics/statistics-moves.ts) are added here instead of written: given with
   * `counts` (and only so), for the caller to write with `writeStatistics` after `moveStatusCounts`.
   */
  statistics?: StatisticsMoves;
  /**
   * Envelope recipients per mail as they stand after the move, where the caller knows them for certain (the
   * worker wrote every one of them in this transaction): those mails' application events need no read.
   */
  eventRecipients?: ReadonlyMap<number, readonly EventRecipient[]>;
}

/** Status → how much its counter moves. */
export type StatusCountMoves = Map<number, number>;
