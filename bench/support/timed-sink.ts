/**
 * A tiny SMTP sink on loopback that notes when each delivery starts: the time of MAIL FROM (the first command
 * of a message on a pooled connection), keyed by the envelope sender, so the idle-latency benchmark can tell
 * which of its mails arrived and when. Everything is accepted and discarded.
 */
import { performance } from 'node:perf_hooks';
import { SMTPServer } from 'smtp-server';

export interface TimedSink {
  url: string;
  /** Resolves with the wall-clock time (ms since the epoch, sub-millisecond) of MAIL FROM for this sender. */
  waitForMailFrom(sender: string, timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

/** Milliseconds since the epoch with the resolution of performance.now(). */
export const preciseNow = () => performance.timeOrigin + performance.now();

export async function startTimedSink(): Promise<TimedSink> {
  const seen = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    onMailFrom(address, _session, callback) {
      const at = preciseNow();
      const sender = address.address.toLowerCase();
      const waiter = waiters.get(sender);
      if (waiter) {
        waiters.delete(sender);
        waiter(at);
      } else {
        seen.set(sender, at);
      }
      callback();
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.once('end', () => callback(null, 'OK: discarded'));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `smtp://127.0.0.1:${port}`,
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
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
