/**
 * Loopback ports and bounded waiting, shared by every test and benchmark that needs them (one copy, so a fix
 * to the probe or the deadline lands everywhere at once).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';

/** The first port of the kernel's ephemeral range, read once (Linux's default where it cannot be read). */
const FIRST_EPHEMERAL_PORT = ((): number => {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 12_000) return low;
  } catch {
    // Not Linux: 32768 is below macOS's range (from 49152) as well.
  }
  return 32_768;
})();

const FIRST_PORT = 10_000;

function canListen(port: number): Promise<boolean> {
  const probe = net.createServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * A loopback port that was free a moment ago, for a listener the test starts next (where 0 means "off", as for
 * `SMTP_PORT`, or where the test must know the port before the process starts). It is drawn at random below the
 * kernel's ephemeral range: a port from `listen(0)` comes from that range, and before the test's listener bound it
 * an outgoing connection of another test could take it as its local port (EADDRINUSE, seen in a full run beside two
 * busy loops). Below the range only another probe can take it, and the draw makes that unlikely.
 */
export async function freePort(): Promise<number> {
  const span = FIRST_EPHEMERAL_PORT - FIRST_PORT;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = FIRST_PORT + crypto.randomInt(span);
    if (await canListen(port)) return port;
  }
  throw new Error(`No free loopback port found between ${FIRST_PORT} and ${FIRST_PORT + span - 1} in 100 draws`);
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
