/**
 * A tiny SMTP sink on loopback that notes when each delivery starts: the time of MAIL FROM (the first command
 * of a message on a pooled connection), keyed by the envelope sender, so the idle-latency benchmark can tell
 * which of its mails arrived and when. Everything is accepted and discarded.
 */
import { listenDiscardingSink } from './discarding-sink.js';

export interface TimedSink {
  url: string;
  /** Resolves with the wall-clock time (ms since the epoch, sub-millisecond) of MAIL FROM for this sender. */
  waitForMailFrom(sender: string, timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

export async function startTimedSink(): Promise<TimedSink> {
  const seen = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  const sink = await listenDiscardingSink((sender, at) => {
    const waiter = waiters.get(sender);
    if (waiter) {
      waiters.delete(sender);
      waiter(at);
    } else {
      seen.set(sender, at);
    }
  });
  return {
    url: sink.url,
    waitForMailFrom(sender, timeoutMs) {
      const key = sender.toLowerCase();
      const already = seen.get(key);
      if (already !== undefined) {
        seen.delete(key);
        return Promise.resolve(already);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(key);
          reject(new Error(`no delivery from ${sender} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.set(key, (at) => {
          clearTimeout(timer);
          resolve(at);
        });
      });
    },
    close: () => sink.close(),
  };
}
