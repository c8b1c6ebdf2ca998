/**
 * The live hub's batches and their text. Each flush is a batch with a sequence number (the SSE `id:`,
 * `<epoch>.<seq>`, the epoch new in every process). The last `ringSize` batches are kept, so a client that
 * reconnects with `Last-Event-ID` gets what it missed merged into one batch; from an id the ring no longer
 * holds (too old, another process or a restart) it cannot be told, and the hub answers `resync`.
 */
import crypto from 'node:crypto';
import { STATUS_CODES, type LiveMail, type LiveResyncReason } from '@outbox/contract';

export interface Batch {
  seq: number;
  /** No stream was connected when it happened: nothing was read, a resume across it needs a resync. */
  lost: boolean;
  mails: LiveMail[];
  counts: Record<string, number> | undefined;
  resync: LiveResyncReason | undefined;
}

/** The six status counters as the `counts` event carries them: every code present, keyed by its string. */
export function countsByCode(counts: ReadonlyMap<number, number>): Record<string, number> {
  return Object.fromEntries(STATUS_CODES.map((code) => [String(code), counts.get(code) ?? 0]));
}

export interface BatchRing {
  /** The newest batch's sequence number (0 before the first). */
  readonly seq: number;
  /** Keeps a new batch under the next sequence number. */
  add(batch: Omit<Batch, 'seq'>): Batch;
  /** What a stream resuming after `lastEventId` missed, merged into one batch; undefined when it cannot be told. */
  missedSince(lastEventId: string | undefined): Batch | undefined;
  eventId(seq: number): string;
  frame(seq: number, event: string, data: unknown): string;
  /** The batch as SSE text: its mails, counts and resync, each an event under its id ('' when empty). */
  textOf(batch: Batch): string;
}

export function createBatchRing(ringSize: number): BatchRing {
  const epoch = crypto.randomBytes(4).toString('hex');
  let seq = 0;
  const ring: Batch[] = [];
  const eventId = (n: number) => `${epoch}.${n}`;
  const frame = (id: number, event: string, data: unknown) => `id: ${eventId(id)}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

  return {
    get seq() {
      return seq;
    },
    add(batch) {
      const kept = { seq: ++seq, ...batch };
      ring.push(kept);
      if (ring.length > ringSize) ring.splice(0, ring.length - ringSize);
      return kept;
    },
    missedSince(lastEventId) {
      const match = /^([0-9a-f]+)\.(\d+)$/.exec(lastEventId ?? '');
      if (!match || match[1] !== epoch) return undefined;
      const from = Number(match[2]);
      if (from > seq) return undefined;
      const oldest = ring[0]?.seq ?? seq + 1;
      if (from < oldest - 1 && from < seq) return undefined;
      const merged = new Map<number, LiveMail>();
      let counts: Record<string, number> | undefined;
      let resync: LiveResyncReason | undefined;
      for (const batch of ring) {
        if (batch.seq <= from) continue;
        if (batch.lost) return undefined;
        for (const mail of batch.mails) merged.set(mail.id, { ...mail, isNew: mail.isNew || (merged.get(mail.id)?.isNew ?? false) });
        counts = batch.counts ?? counts;
        resync = batch.resync ?? resync;
      }
      return { seq, lost: false, mails: [...merged.values()].sort((a, b) => b.id - a.id), counts, resync };
    },
    eventId,
    frame,
    textOf(batch) {
      let text = '';
      if (batch.mails.length > 0) text += frame(batch.seq, 'mail', { mails: batch.mails });
      if (batch.counts) text += frame(batch.seq, 'counts', { counts: batch.counts });
      if (batch.resync) text += frame(batch.seq, 'resync', { reason: batch.resync });
      return text;
    },
  };
}
