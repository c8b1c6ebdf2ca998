/**
 * The SMTP listeners' per-client limits, from the outside (docs/limits.md, net/smtp-session-limits.ts): Outbox
 * started as `npm start` starts it, with the bounce listener and the submission listener on, real sockets from two
 * loopback addresses (Linux routes all of 127/8 to the loopback interface).
 * - One host opening 100 idle sessions to the bounce listener gets SMTP_MAX_CONNECTIONS_PER_CLIENT of them; the
 *   rest are refused at connect with 421, and a reporting MTA at another address still gets its 220.
 * - A session that only sends NOOP is closed with 421 after SMTP_NO_PROGRESS_TIMEOUT, on both listeners (before, a
 *   NOOP every 50 s held a session for ever).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/net.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { startBounceOutbox, type BounceOutbox } from './bounce-support.js';

let relay: TestRelay;
let outbox: BounceOutbox;

beforeAll(async () => {
  relay = await startTestRelay();
  // The default no-progress time (60 s): the 100 connects below must all be made while the first 10 sessions still
  // hold their places. With 1 s, at load ~17 in a full run, the first 10 were closed for no progress before the last
  // connects came, and their places went to 10 later ones (20 greeted, never more than 10 at once).
  outbox = await startBounceOutbox({ RELAY_URL: relay.url, SMTP_MAX_CONNECTIONS_PER_CLIENT: '10' });
});

afterAll(async () => {
  await outbox?.stop();
  await relay?.close();
});

/** A raw client from `localAddress`: its first line (the greeting or a refusal), and every later line it reads. */
function connect(
  port: number,
  localAddress: string,
): Promise<{ socket: net.Socket; lines: string[]; first: string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    const lines: string[] = [];
    let buffer = '';
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.setTimeout(20_000, () => socket.destroy(new Error('no greeting')));
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      let end: number;
      while ((end = buffer.indexOf('\r\n')) >= 0) {
        lines.push(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (lines.length === 1) {
          socket.setTimeout(0);
          resolve({ socket, lines, first: lines[0]!, closed });
        }
      }
    });
  });
}

describe('per-client limits of the SMTP listeners', () => {
  it('100 idle sessions from one address: 10 are greeted, the rest refused with 421; another address still gets 220', async () => {
    const sessions = await Promise.all(Array.from({ length: 100 }, () => connect(outbox.bouncePort, '127.0.0.1')));
    try {
      const greeted = sessions.filter((s) => s.first.startsWith('220'));
      const refused = sessions.filter((s) => s.first.startsWith('421'));
      expect(greeted).toHaveLength(10);
      expect(refused).toHaveLength(90);
      expect(refused[0]!.first).toMatch(/^421 4\.7\.0 Too many connections from your address: at most 10 at once/);
      const other = await connect(outbox.bouncePort, '127.0.0.2');
      expect(other.first).toMatch(/^220 /);
      other.socket.destroy();
    } finally {
      for (const session of sessions) session.socket.destroy();
    }
  });

  it('a session that only sends NOOP is closed with 421 after the no-progress time, on the bounce and the submission listener', async () => {
    const submissionPort = await freePort();
    const quick = await startBounceOutbox({ RELAY_URL: relay.url, SMTP_PORT: String(submissionPort), SMTP_NO_PROGRESS_TIMEOUT: '1s' });
    try {
      await closesStalledSessions([quick.bouncePort, submissionPort]);
    } finally {
      await quick.stop();
    }
  });
});

/** A session on each port that only sends NOOP is closed with 421 after the no-progress time of 1 s. */
async function closesStalledSessions(ports: number[]): Promise<void> {
  for (const port of ports) {
    // From before the connection: the listener's timer starts when it accepts, and on a loaded machine the
    // greeting may reach this side a good part of the second later.
    const started = Date.now();
    const session = await connect(port, '127.0.0.3');
    expect(session.first).toMatch(/^220 /);
    const noop = setInterval(() => session.socket.write('NOOP\r\n'), 200);
    try {
      await session.closed;
    } finally {
      clearInterval(noop);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(session.lines.some((line) => /^421 4\.4\.2 Closing: no (report handed over|AUTH) within 1 s/.test(line))).toBe(true);
  }
}
