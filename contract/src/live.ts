import { Type, type Static } from '@sinclair/typebox';
import { Instant } from './common.js';

/**
 * `GET /api/v1/events` (server-sent events, docs/api.md#live-updates-get-apiv1events): what changed since the last message,
 * coalesced (at most one batch per flush interval, ~300 ms, however fast mail moves).
 */

/** One mail as it is now. `status` null: the mail is gone (deleted or purged). */
export const LiveMail = Type.Object({
  id: Type.Integer(),
  status: Type.Union([Type.Integer({ minimum: 0, maximum: 5 }), Type.Null()]),
  lastUpdate: Instant,
  providerSentDate: Instant,
  receivedDate: Instant,
  /** The mail was accepted since the last message (a console shows "N new" rather than inserting it). */
  isNew: Type.Boolean(),
});
export type LiveMail = Static<typeof LiveMail>;

/** `event: mail`: the mails that changed, newest id first, at most LIVE_MAX_MAILS of them. */
export const LiveMailEvent = Type.Object({ mails: Type.Array(LiveMail) });
export type LiveMailEvent = Static<typeof LiveMailEvent>;

/** `event: counts`: mails per status code over the whole store (the list's meta.counts). */
export const LiveCountsEvent = Type.Object({ counts: Type.Record(Type.String(), Type.Integer()) });
export type LiveCountsEvent = Static<typeof LiveCountsEvent>;

/**
 * `event: resync`: changes were missed (a resume from an id the server no longer holds, a change feed that
 * reconnected, more changes in one batch than it carries): reload what is shown.
 */
export const LiveResyncEvent = Type.Object({
  reason: Type.Unsafe<LiveResyncReason>({ type: 'string', enum: ['resume', 'feed', 'overflow'] }),
});
export type LiveResyncReason = 'resume' | 'feed' | 'overflow';
export type LiveResyncEvent = Static<typeof LiveResyncEvent>;

export const LIVE_EVENT_TYPES = ['mail', 'counts', 'resync'] as const;
export type LiveEventType = (typeof LIVE_EVENT_TYPES)[number];

/** The most mails one `mail` event carries; more in one batch also sends `resync` (reason overflow). */
export const LIVE_MAX_MAILS = 1000;
