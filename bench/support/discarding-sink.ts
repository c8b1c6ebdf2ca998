/**
 * The SMTP peer of the benchmarks that time arrivals (bench/support/arrival-sink.ts in a child process,
 * bench/support/timed-sink.ts in this one): it accepts everything, discards it, and reports each MAIL FROM (the first
 * command of a message on a pooled connection) with its envelope sender and the time it came.
 */
import { performance } from 'node:perf_hooks';
import { SMTPServer } from 'smtp-server';

/** Milliseconds since the epoch with the resolution of performance.now(): comparable between processes. */
export const preciseNow = () => performance.timeOrigin + performance.now();

export interface DiscardingSink {
  url: string;
  close(): Promise<void>;
}

/** Listens on loopback, on a port the OS picks; `onMailFrom` gets the sender in lower case and preciseNow(). */
export async function listenDiscardingSink(onMailFrom: (sender: string, at: number) => void): Promise<DiscardingSink> {
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    onMailFrom(address, _session, callback) {
      onMailFrom(address.address.toLowerCase(), preciseNow());
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
  return { url: `smtp://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
