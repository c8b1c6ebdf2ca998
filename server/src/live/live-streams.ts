/**
 * The live hub's open streams and their limits: the total and per-token caps (a connect under way holds its
 * place), the writes that drop a reader that does not keep up, and the difference between ending a stream
 * (graceful, the server is stopping), dropping it (at once) and releasing it (its socket closed: only then does
 * it stop counting).
 */
import type { Logger } from '../logger.js';

/** Where a stream's text goes: the route wraps the HTTP response in this. */
export interface LiveSink {
  /** Returns false once the sink is over its buffer: the hub then drops that stream (a slow reader reconnects). */
  write(chunk: string | Buffer): boolean;
  /** Ends the stream gracefully (the server is stopping): the client reconnects elsewhere. */
  end(): void;
  /**
   * Drops the connection at once, buffered bytes and all. A graceful end would wait for a reader that may
   * never read, keeping the socket and its buffer.
   */
  destroy(): void;
  /** How long the socket has been refusing more bytes without draining (0 while it takes them). */
  stalledForMs(): number;
}

export interface LiveStream {
  token: string;
  sink: LiveSink;
  openedAt: number;
  /** Nothing more is written to it; it stays counted until `released` (its socket closed). */
  closed: boolean;
}

export class TooManyStreamsError extends Error {}

export function createLiveStreams(options: {
  maxStreams: number;
  maxStreamsPerToken: number;
  writeStallMs: number;
  logger?: Pick<Logger, 'warn'> | undefined;
}) {
  const { logger } = options;
  /**
   * Every stream whose socket is still open, ended ones included: a stream counts against the limits until
   * the route says its socket closed (`release`), so a dropped client that lingers still takes its place.
   */
  const streams = new Set<LiveStream>();
  /** Connects under way (between the room check and joining `streams`): they count too, so simultaneous ones cannot all pass. */
  let reserved = 0;

  const isOpen = (stream: LiveStream) => !stream.closed;

  /** Overflow, eviction, revocation, a stalled write: the socket goes at once, whether or not the client reads. */
  function drop(stream: LiveStream): void {
    if (stream.closed) return;
    stream.closed = true;
    stream.sink.destroy();
  }

  function send(stream: LiveStream, chunk: string | Buffer): void {
    if (stream.closed) return;
    if (!stream.sink.write(chunk)) {
      logger?.warn({ buffered: true }, 'live update stream too slow: dropped (the client reconnects and resumes)');
      drop(stream);
    }
  }

  return {
    get size(): number {
      return streams.size;
    },
    hasRoom(): boolean {
      return streams.size + reserved < options.maxStreams;
    },
    /** Holds a place for a connect under way; the answer gives it back. */
    reserve(): () => void {
      reserved++;
      return () => {
        reserved--;
      };
    },
    /** Adds a stream, dropping the oldest of its token's when it has too many. */
    add(stream: LiveStream): void {
      const same = [...streams].filter((s) => s.token === stream.token && isOpen(s)).sort((a, b) => a.openedAt - b.openedAt);
      for (const old of same.slice(0, Math.max(0, same.length - options.maxStreamsPerToken + 1))) drop(old);
      streams.add(stream);
    },
    send,
    sendAll(chunk: string | Buffer): void {
      for (const stream of [...streams]) send(stream, chunk);
    },
    drop,
    /** The stream's socket closed: only now does it stop counting against the limits. */
    release(stream: LiveStream): void {
      stream.closed = true;
      streams.delete(stream);
    },
    /** The tokens of the streams still written to. */
    openTokens(): Set<string> {
      return new Set([...streams].filter(isOpen).map((s) => s.token));
    },
    dropToken(token: string): void {
      for (const stream of [...streams]) if (stream.token === token) drop(stream);
    },
    dropStalled(): void {
      for (const stream of streams) {
        if (isOpen(stream) && stream.sink.stalledForMs() >= options.writeStallMs) {
          logger?.warn({ stalledMs: options.writeStallMs }, 'live update stream stalled: dropped (the client reconnects and resumes)');
          drop(stream);
        }
      }
    },
    /** Graceful: the server is stopping. */
    endAll(): void {
      for (const stream of [...streams]) {
        if (stream.closed) continue;
        stream.closed = true;
        stream.sink.end();
      }
      streams.clear();
    },
  };
}
