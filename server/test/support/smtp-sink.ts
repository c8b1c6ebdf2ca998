/**
 * Postfix's smtp-sink (`/usr/sbin/smtp-sink`, in Debian's `postfix` package) as a relay: a real SMTP server of
 * another code base than ours, in its own process, so that a test can SIGKILL it mid-flood and start it again on the
 * same port. Each transaction is dumped to a file of its own (`-d`), which is how a test counts what the peer received.
 *
 * smtp-sink creates a transaction's file at DATA and writes it at the final "." (small messages stay in its buffer
 * until then): a file cut by a kill is empty or short, so a message counts as received only when its dump holds the
 * whole message (`received(marker)`: the body's last line, chosen by the test).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { makeTempDir } from './context.js';
import { freePort, waitUntil } from './net.js';

const SMTP_SINK = '/usr/sbin/smtp-sink';

/** Why smtp-sink cannot run here, or undefined when it can. */
export function smtpSinkMissing(): string | undefined {
  if (!fs.existsSync(SMTP_SINK)) return `${SMTP_SINK} is not installed (Debian: apt-get install -y postfix)`;
  return undefined;
}

export interface SmtpSink {
  port: number;
  url: string;
  /** The smtp-sink process: a test kills it with `kill()`. */
  pid: number;
  /** The Message-IDs of the messages dumped whole (their text holds `marker`), one entry per transaction. */
  received(marker: string): string[];
  /** Transactions that reached DATA, whole or cut. */
  transactions(): number;
  /** SIGKILL: the peer vanishes mid-conversation, as a crashed relay does. */
  kill(): Promise<void>;
  /** SIGTERM, for the test's end. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Starts smtp-sink on loopback (`port`: a free one by default), ready once it greets. */
export async function startSmtpSink(options: { port?: number } = {}): Promise<SmtpSink> {
  const port = options.port ?? (await freePort());
  const dir = makeTempDir('outbox-smtp-sink-');
  const asRoot = process.getuid?.() === 0;
  // As root smtp-sink must drop to another user (-u), which then writes the dumps.
  if (asRoot) fs.chmodSync(dir, 0o777);
  const args = [
    ...(asRoot ? ['-u', 'nobody'] : []),
    // One file per transaction, named by the time and a random number (two messages in one second with the same
    // random number would share a file: the time keeps that out of reach).
    '-d',
    path.join(dir, '%H%M%S.'),
    `127.0.0.1:${port}`,
    // The listen backlog: a flood opens its connections at once.
    '256',
  ];
  const child = spawn(SMTP_SINK, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  running.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', () => running.delete(child));
  await waitUntil(
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`smtp-sink exited at start: ${stderr}`);
      return greets(port);
    },
    { timeoutMs: 10_000, intervalMs: 20, what: `smtp-sink to greet on port ${port}` },
  );
  const files = () => fs.readdirSync(dir);
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    pid: child.pid!,
    received(marker) {
      const ids: string[] = [];
      for (const name of files()) {
        const text = fs.readFileSync(path.join(dir, name), 'latin1');
        if (!text.includes(marker)) continue;
        const id = /^Message-ID:\s*(\S+)/im.exec(text)?.[1];
        if (id) ids.push(id);
      }
      return ids;
    },
    transactions: () => files().length,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Every smtp-sink started here and still running, stopped (a test's afterEach). */
export async function stopAllSmtpSinks(): Promise<void> {
  await Promise.all(
    [...running].map((child) => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      return exited;
    }),
  );
}

/** Whether something on the port answers with an SMTP greeting. */
function greets(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.once('data', (chunk: Buffer) => done(chunk.toString().startsWith('220')));
    socket.once('error', () => done(false));
    socket.setTimeout(2_000, () => done(false));
  });
}
