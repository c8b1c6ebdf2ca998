/**
 * Loopback ports and bounded waiting, shared by every test and benchmark that needs them (one copy, so a fix
 * to the probe or the deadline lands everywhere at once).
 */
import net from 'node:net';

/**
 * A loopback port that was free a moment ago: bound on port 0, read and released. The OS does not hand the
 * same port out again at once, so a test can give it to a listener it starts next (where 0 means "off", as
 * for `SMTP_PORT`, or where the test must know the port before the process starts).
 */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('The port probe has no address');
  return address.port;
}

/**
 * A loopback port with nothing listening: a relay that is down, a peer that refuses the connection. It is the
 * same probe as freePort; the name says what the test means by it.
 */
export const closedPort = freePort;

export interface WaitOptions {
  /** Give up after this long; the error says what was awaited. Default 20 s. */
  timeoutMs?: number;
  /** Time between checks. Default 25 ms. */
  intervalMs?: number;
  /** What is awaited, for the error message, e.g. "every mail ProviderSent". */
  what?: string;
}

/**
 * Checks until `check` answers true, or throws once the deadline has passed. For conditions a test cannot be
 * told about (another process's work, a relay's inbox); anything driven by a ManualClock needs no waiting.
 */
export async function waitUntil(check: () => Promise<boolean> | boolean, options: WaitOptions = {}): Promise<void> {
  const { timeoutMs = 20_000, intervalMs = 25, what = 'the condition' } = options;
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Waited ${timeoutMs} ms for ${what}, in vain`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** The median of some measurements (the upper one of the middle two for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('The median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
