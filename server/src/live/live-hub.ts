/**
 * The live hub behind `GET /api/v1/events` (docs/api.md#live-updates-get-apiv1events). It listens to the store's change feed
 * once per process (in-process changes and, on PostgreSQL, every other instance's through LISTEN/NOTIFY),
 * gathers the ids that changed, and flushes them at most once per `flushMs`: one read of those rows and one of
 * the six counters, whatever the number of connected consoles, then the same text to every stream. So a
 * console gets at most ~1000/flushMs messages a second however fast mail moves, and 50 consoles cost what
 * one does plus the writes.
 *
 * The batches a flush makes and the resume from `Last-Event-ID` are `live-batches.ts`; the streams and their
 * limits are `live-streams.ts`.
 */
import { LIVE_MAX_MAILS, type AlertRuleStatus, type LiveMail, type LiveResyncReason } from '@outbox/contract';
import { ALERTS_CHANGED } from '../alerts/alert-evaluator.js';
import { SESSIONS_REVOKED, type AuthService } from '../auth/auth.service.js';
import type { Logger } from '../logger.js';
import { iso } from '../mail/mail-mapping.js';
import type { Store } from '../store/connection.js';
import type { StoreChange } from '../store/change-feed.js';
import { countsByCode, createBatchRing } from './live-batches.js';
import { findMailStates, getStatusCounts } from './live.repository.js';
import { createLiveStreams, TooManyStreamsError, type LiveSink, type LiveStream } from './live-streams.js';

export interface LiveHubOptions {
  store: Store;
  auth: Pick<AuthService, 'findOperatorByToken'>;
  /** At most one batch per this many ms (and the first one of a quiet spell after `firstFlushMs`). */
  flushMs?: number;
  firstFlushMs?: number;
  /** A comment line this often, so proxies and the client's stall detection see the stream alive. */
  keepAliveMs?: number;
  /** Every stream's token is checked again this often (session expiry, a logout on another instance). */
  authCheckMs?: number;
  ringSize?: number;
  maxStreamsPerToken?: number;
  maxStreams?: number;
  /** A stream whose socket takes no bytes for this long is dropped (a reader that stopped reading). */
  writeStallMs?: number;
  /** A reader that lets this much pile up is not reading: its stream is dropped, and it resumes with Last-Event-ID. */
  maxBufferedBytes?: number;
  logger?: Pick<Logger, 'warn' | 'error'>;
  /** The firing alert rules, read when a round of the alert evaluator changed a state (docs/alerts.md). */
  readAlerts?: () => Promise<AlertRuleStatus[]>;
}

export function createLiveHub(options: LiveHubOptions) {
  const { store, auth, logger } = options;
  const flushMs = options.flushMs ?? 300;
  const firstFlushMs = Math.min(options.firstFlushMs ?? 25, flushMs);
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const authCheckMs = options.authCheckMs ?? 15_000;
  const writeStallMs = options.writeStallMs ?? 30_000;
  const maxBufferedBytes = options.maxBufferedBytes ?? 1024 * 1024;

  const batches = createBatchRing(options.ringSize ?? 64);
  const streams = createLiveStreams({
    maxStreams: options.maxStreams ?? 1000,
    maxStreamsPerToken: options.maxStreamsPerToken ?? 8,
    writeStallMs,
    logger,
  });
  /** Moves at every revocation heard, so a connect that was awaiting meanwhile checks its token again. */
  let revocations = 0;
  /** Changed ids since the last flush; true when one of the changes was an acceptance. */
  let pending = new Map<number, boolean>();
  let pendingResync: LiveResyncReason | undefined;
  let lastCounts: string | undefined;
  let lastFlushAt = 0;
  let flushTimer: NodeJS.Timeout | undefined;
  let flushing = false;
  let unsubscribe: (() => void) | undefined;
  let timers: NodeJS.Timeout[] = [];
  let closed = false;

  function onChange(change: StoreChange): void {
    if (change.type === SESSIONS_REVOKED) {
      revocations++;
      void checkTokens();
      return;
    }
    if (change.type === ALERTS_CHANGED) {
      void sendAlerts();
      return;
    }
    if (change.type === 'resync') pendingResync = 'feed';
    if (change.truncated) pendingResync = 'overflow';
    const isNew = change.type === 'created';
    for (const id of change.ids) pending.set(id, (pending.get(id) ?? false) || isNew);
    scheduleFlush();
  }

  function scheduleFlush(): void {
    if (flushTimer || flushing || closed) return;
    const now = Date.now();
    const delay = Math.max(firstFlushMs, lastFlushAt + flushMs - now);
    flushTimer = setTimeout(() => {
      flushTimer = undefined;
      void flush();
    }, delay);
    flushTimer.unref();
  }

  async function flush(): Promise<void> {
    if (flushing || closed) return;
    const ids = pending;
    const resync = pendingResync;
    pending = new Map();
    pendingResync = undefined;
    if (ids.size === 0 && resync === undefined) return;
    lastFlushAt = Date.now();
    if (streams.size === 0) {
      // Nobody listens: read nothing, but a resume from before this point must reload.
      batches.add({ lost: true, mails: [], counts: undefined, resync: undefined });
      lastCounts = undefined;
      return;
    }
    flushing = true;
    try {
      // Newest first: a console shows the newest mails unless told otherwise, so a cut keeps what is seen.
      const all = [...ids.keys()].sort((a, b) => b - a);
      const chosen = all.slice(0, LIVE_MAX_MAILS);
      const [rows, counts] = await Promise.all([findMailStates(store.db, chosen), getStatusCounts(store.db)]);
      const byId = new Map(rows.map((row) => [row.id, row]));
      const mails: LiveMail[] = chosen.map((id) => {
        const row = byId.get(id);
        return {
          id,
          status: row ? row.status : null,
          lastUpdate: iso(row?.last_update_at),
          providerSentDate: iso(row?.provider_sent_at),
          receivedDate: iso(row?.received_at),
          isNew: ids.get(id) ?? false,
        };
      });
      const countsRecord = countsByCode(counts);
      const countsText = JSON.stringify(countsRecord);
      const countsChanged = countsText !== lastCounts;
      lastCounts = countsText;
      // Kept synchronously with the streams' set: a stream that connects now either finds it in the ring or gets it here.
      const batch = batches.add({
        lost: false,
        mails,
        counts: countsChanged ? countsRecord : undefined,
        resync: resync ?? (all.length > chosen.length ? 'overflow' : undefined),
      });
      const text = batches.textOf(batch);
      // Encoded once for every stream: the same bytes go to all of them.
      if (text !== '') streams.sendAll(Buffer.from(text));
    } catch (error) {
      logger?.error({ err: error }, 'live update flush failed; retrying');
      // Put the ids back (later changes win) and try again at the next interval.
      for (const [id, isNew] of ids) pending.set(id, (pending.get(id) ?? false) || isNew);
      pendingResync ??= resync;
    } finally {
      flushing = false;
    }
    if (pending.size > 0 || pendingResync !== undefined) scheduleFlush();
  }

  /** `event: alerts` to every stream, outside the batches (no id: a console reads GET /api/v1/alerts on connect). */
  async function sendAlerts(): Promise<void> {
    if (!options.readAlerts || streams.size === 0) return;
    try {
      const firing = (await options.readAlerts()).filter((rule) => rule.state === 'firing');
      streams.sendAll(Buffer.from(`event: alerts\ndata: ${JSON.stringify({ firing })}\n\n`));
    } catch (error) {
      logger?.error({ err: error }, 'alert update read failed; consoles poll GET /api/v1/alerts');
    }
  }

  async function checkTokens(): Promise<void> {
    await Promise.all(
      [...streams.openTokens()].map(async (token) => {
        let valid = true;
        try {
          valid = (await auth.findOperatorByToken(token)) !== undefined;
        } catch {
          return; // the store is away: keep the stream, check again next time
        }
        if (!valid) streams.dropToken(token);
      }),
    );
  }

  function start(): void {
    if (unsubscribe || closed) return;
    unsubscribe = store.changes.subscribe(onChange);
    const keepAliveBytes = Buffer.from(': keep-alive\n\n');
    const keepAlive = setInterval(() => streams.sendAll(keepAliveBytes), keepAliveMs);
    const authCheck = setInterval(() => void checkTokens(), authCheckMs);
    // A quarter of the bound: a stalled stream goes between 1× and 1.25× writeStallMs after it stopped taking bytes.
    const stallCheck = setInterval(streams.dropStalled, Math.max(10, Math.min(5_000, writeStallMs / 4)));
    keepAlive.unref();
    authCheck.unref();
    stallCheck.unref();
    timers = [keepAlive, authCheck, stallCheck];
  }

  // Listening from the start: on PostgreSQL the LISTEN connection is up before the first console connects
  // (its "resync" at connect then finds no stream and costs nothing).
  start();

  return {
    /** Whether one more stream may open (checked before the answer starts, so a refusal is a plain 503). */
    hasRoom(): boolean {
      return !closed && streams.hasRoom();
    },

    /**
     * Opens a stream for an authenticated operator's token: a `counts` snapshot (or, resuming, what was
     * missed, or `resync`), then every batch. The oldest stream of the same token ends when it has too many.
     */
    async connect(token: string, lastEventId: string | undefined, sink: LiveSink): Promise<{ close(): void }> {
      if (!this.hasRoom()) throw new TooManyStreamsError('too many live streams');
      start();
      const stream: LiveStream = { token, sink, openedAt: Date.now(), closed: false };
      // The route calls close() when the socket closes: the stream is forgotten then, not before.
      const handle = { close: () => streams.release(stream) };
      sink.write('retry: 2000\n: connected\n\n');
      const resuming = lastEventId !== undefined && lastEventId !== '';
      const seqBefore = batches.seq;
      const revocationsBefore = revocations;
      // Read before joining; what happens meanwhile is in the ring after seqBefore and is replayed below.
      // The place is held across the await, so connects arriving together cannot all pass the room check.
      const unreserve = streams.reserve();
      let counts: ReadonlyMap<number, number> | undefined;
      try {
        counts = resuming ? undefined : await getStatusCounts(store.db);
      } finally {
        unreserve();
      }
      if (stream.closed || closed) {
        sink.destroy();
        return handle;
      }
      let text: string;
      if (resuming) {
        const missed = batches.missedSince(lastEventId);
        text = missed ? batches.textOf(missed) : batches.frame(batches.seq, 'resync', { reason: 'resume' });
        // Nothing was missed: the id still moves on, so the next resume starts here.
        if (text === '') text = `id: ${batches.eventId(batches.seq)}\n\n`;
      } else {
        const snapshot = countsByCode(counts ?? new Map());
        text = batches.frame(seqBefore, 'counts', { counts: snapshot });
        const after = batches.missedSince(batches.eventId(seqBefore));
        text += after ? batches.textOf(after) : batches.frame(batches.seq, 'resync', { reason: 'resume' });
      }
      streams.add(stream);
      streams.send(stream, text);
      // A logout heard while this connect awaited found no stream of this token to drop: look again.
      if (revocations !== revocationsBefore) void checkTokens();
      return handle;
    },

    /** What a stream's sink may hold before `write` answers false (the route's buffer). */
    maxBufferedBytes,

    /** Streams whose sockets are open, ended ones included until they close. */
    get streamCount(): number {
      return streams.size;
    },

    /** Ends every stream (the server is stopping): clients reconnect with backoff to whichever instance answers. */
    close(): void {
      closed = true;
      unsubscribe?.();
      if (flushTimer) clearTimeout(flushTimer);
      for (const timer of timers) clearInterval(timer);
      streams.endAll();
    },
  };
}

export type LiveHub = ReturnType<typeof createLiveHub>;
