/**
 * The clients of socket-flood.test.ts, run as their own process so that their work does not slow the operator's
 * measured requests: `FLOOD_COUNT` sockets against `FLOOD_PORT`, in four kinds, each reopened 2 s after the
 * server closes it (an attacker keeps up the pressure):
 * - idle: connects and sends nothing;
 * - slow-anonymous: a POST with a 1 MB Content-Length and no token, its body one byte a second;
 * - slow-authenticated: the same with a valid token;
 * - stream: GET /api/v1/events with a token (`FLOOD_TOKENS`, comma-separated) and never reads a byte.
 * Prints a JSON line `{"ready":n}` once every socket was opened once, then on SIGUSR2 (and at SIGTERM) one with
 * the count of sockets of each kind open and closed by the server so far.
 */
import net from 'node:net';

type Kind = 'idle' | 'slowAnonymous' | 'slowAuthenticated' | 'stream';
const env = process.env;
const port = Number(env.FLOOD_PORT);
const count = Number(env.FLOOD_COUNT);
const tokens = env.FLOOD_TOKENS!.split(',');
const kinds: Kind[] = ['idle', 'slowAnonymous', 'slowAuthenticated', 'stream'];
const open: Record<Kind, number> = { idle: 0, slowAnonymous: 0, slowAuthenticated: 0, stream: 0 };
const closed: Record<Kind, number> = { idle: 0, slowAnonymous: 0, slowAuthenticated: 0, stream: 0 };
let stopping = false;
let opened = 0;

function requestOf(kind: Kind, index: number): string {
  const token = tokens[index % tokens.length]!;
  switch (kind) {
    case 'idle':
      return '';
    case 'slowAnonymous':
      return 'POST /api/v1/mail/bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{';
    case 'slowAuthenticated':
      return `POST /api/v1/mail/bulk HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{`;
    case 'stream':
      return `GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${token}\r\n\r\n`;
  }
}

function connect(kind: Kind, index: number, first: boolean): void {
  const socket = net.connect(port, '127.0.0.1');
  let trickle: NodeJS.Timeout | undefined;
  let connected = false;
  socket.on('error', () => {});
  socket.once('connect', () => {
    connected = true;
    open[kind]++;
    if (first && ++opened === count) process.stdout.write(`${JSON.stringify({ ready: opened })}\n`);
    const request = requestOf(kind, index);
    if (request) socket.write(request);
    if (kind === 'slowAnonymous' || kind === 'slowAuthenticated') trickle = setInterval(() => socket.write(' '), 1000);
    // A stream never reads: whatever the server sends stays in the socket's buffers. The others read (and drop)
    // what little they are sent, so that they see the server close them.
    if (kind === 'stream') socket.pause();
    else socket.resume();
  });
  socket.once('close', () => {
    if (trickle) clearInterval(trickle);
    if (connected) {
      open[kind]--;
      closed[kind]++;
    }
    // Not connected yet (the listen queue was full): it is still a first attempt.
    if (!stopping) setTimeout(() => connect(kind, index, first && !connected), connected ? 2000 : 200);
  });
}

const report = () => process.stdout.write(`${JSON.stringify({ open, closed })}\n`);
process.on('SIGUSR2', report);
process.once('SIGTERM', () => {
  stopping = true;
  report();
  process.exit(0);
});
// In steps of 100, so that the server's listen queue is not overrun by all of them at once.
let next = 0;
const opener = setInterval(() => {
  for (const end = Math.min(count, next + 100); next < end; next++) connect(kinds[next % kinds.length]!, next, true);
  if (next >= count) clearInterval(opener);
}, 20);
