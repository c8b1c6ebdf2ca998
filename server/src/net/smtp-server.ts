/**
 * What Outbox's three SMTP servers share: the submission listener (intake/smtp-listener.ts), the bounce listener
 * (bounces/bounce-listener.ts) and the capture relay (delivery/capture-relay.ts). Each keeps its own handlers
 * (what a session may do and what becomes of a message); the setup around them is made here once:
 * - `createGuardedSmtpServer`: an smtp-server with the per-client limits of net/smtp-session-limits.ts wired to
 *   its connect and close, no reverse lookups, and smtp-server's own logger off (each caller logs what it decides);
 * - `listenSmtp` / `closeSmtp`: bind (port 0 gives a free one) and report the port, or the bind error; close;
 * - `readMessage`: a DATA stream into a buffer, keeping no bytes past the size limit;
 * - `smtpError`: an error smtp-server answers with its code.
 */
import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions } from 'smtp-server';
import type { Logger } from '../logger.js';
import { createSessionLimits, type SessionLimits, type SmtpConnections } from './smtp-session-limits.js';

/** An error smtp-server sends to the client as `<responseCode> <message>`. */
export function smtpError(responseCode: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode });
}

/**
 * The message of a DATA command. Past the server's size limit the bytes are drained but not kept, so an oversize
 * message cannot exhaust memory; smtp-server then answers 552 itself.
 */
export function readMessage(stream: SMTPServerDataStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = true;
    stream.on('data', (chunk: Buffer) => {
      if (stream.sizeExceeded) kept = false;
      if (kept) chunks.push(chunk);
    });
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

export interface SessionGuard {
  /** Sessions open at once in all; smtp-server refuses one more. */
  maxConnections: number;
  /** Sessions open at once per client (an IPv4 address or an IPv6 /64); one more is answered 421 at connect. */
  maxConnectionsPerClient: number;
  /** A session that makes no progress this long is closed with 421; 0: never. */
  noProgressMs: number;
  /** What the server calls progress, for the 421's text and the log (e.g. "no AUTH"). */
  noProgressReason: string;
  closeTimeoutMs: number;
  logger?: Pick<Logger, 'warn'> | undefined;
}

/**
 * An SMTP server whose sessions are bounded per client (net/smtp-session-limits.ts): `options` are the caller's
 * handlers and settings; its `onConnect` and `onClose`, if any, run after the guard's admission and before its
 * release. The limits are returned so the handlers can report progress (`progressed`, `exempt`).
 */
export function createGuardedSmtpServer(options: SMTPServerOptions, guard: SessionGuard): { server: SMTPServer; limits: SessionLimits } {
  const { onConnect, onClose } = options;
  const limits = createSessionLimits(
    // Read when a session needs closing; by then `server` exists.
    {
      get connections() {
        return (server as unknown as SmtpConnections).connections;
      },
    },
    {
      maxPerClient: guard.maxConnectionsPerClient,
      noProgressMs: guard.noProgressMs,
      noProgressReason: guard.noProgressReason,
      ...(guard.logger ? { logger: guard.logger } : {}),
    },
  );
  const server: SMTPServer = new SMTPServer({
    disableReverseLookup: true,
    logger: false,
    ...options,
    maxClients: guard.maxConnections,
    closeTimeout: guard.closeTimeoutMs,
    onConnect(session, callback) {
      if (!limits.admit(session))
        return callback(smtpError(421, `4.7.0 Too many connections from your address: at most ${guard.maxConnectionsPerClient} at once`));
      if (onConnect) return onConnect(session, callback);
      return callback();
    },
    onClose(session, callback) {
      onClose?.(session, callback);
      limits.release(session.id);
    },
  });
  return { server, limits };
}

/** Binds the server; resolves with the port it got (the OS picks one for port 0), or rejects with the bind error. */
export async function listenSmtp(server: SMTPServer, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const address = server.server.address();
  return typeof address === 'object' && address !== null ? address.port : port;
}

/** Stops taking sessions and closes the open ones after smtp-server's close timeout. */
export function closeSmtp(server: SMTPServer): Promise<void> {
  return new Promise<void>((resolve) => server.close(() => resolve()));
}
