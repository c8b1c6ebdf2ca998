/**
 * Per-client limits shared by the two SMTP listeners, the submission listener (intake/smtp-listener.ts) and the bounce
 * listener (bounces/bounce-listener.ts); docs/limits.md:
 * - a client is an IPv4 address, or an IPv6 /64 (one host is usually given a whole /64, and could otherwise take a
 *   new address for every session); an IPv4 client seen through an IPv6 socket (`::ffff:a.b.c.d`) is that IPv4;
 * - sessions open at once per client are capped, so one host cannot hold every session of the listener and lock
 *   out the others (real MTAs, which would retry and then give up);
 * - a session that makes no progress (no transaction begun on the bounce listener; no AUTH on the submission
 *   listener) within the no-progress time is closed with 421, however often it sends NOOP or RSET: smtp-server's
 *   own idle timeout is reset by any command.
 */
import ipaddr from 'ipaddr.js';
import type { Logger } from '../logger.js';

/** The key a client is counted under: its IPv4 address, or its IPv6 address's /64 prefix. */
export function clientKey(remoteAddress: string): string {
  const bare = remoteAddress.replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return remoteAddress;
  const address = ipaddr.process(bare); // ::ffff:a.b.c.d → a.b.c.d
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((part) => part.toString(16)).join(':')}::/64`;
}

/** What the limits need of smtp-server's SMTPServer: its open connections, to close one. */
export interface SmtpConnections {
  connections: Set<{ id: string; send(code: number, message: string): void; close(): void }>;
}

export interface SessionLimitsOptions {
  /** Sessions open at once per client; one more is answered 421 at connect. */
  maxPerClient: number;
  /** A session that makes no progress this long is closed with 421; 0: never. */
  noProgressMs: number;
  /** What the listener calls progress, for the 421's text (e.g. "no report was sent"). */
  noProgressReason: string;
  logger?: Pick<Logger, 'warn'>;
}

export interface SessionLimits {
  /** At connect: false (and nothing counted) when the client is at its cap. */
  admit(session: { id: string; remoteAddress: string }): boolean;
  /** The session made progress: its no-progress time starts again. */
  progressed(sessionId: string): void;
  /** The session has made all the progress that counts (e.g. AUTH succeeded): no no-progress limit any more. */
  exempt(sessionId: string): void;
  /** At close. */
  release(sessionId: string): void;
  /** Open sessions of a client (tests, logs). */
  openOf(remoteAddress: string): number;
}

export function createSessionLimits(server: SmtpConnections, options: SessionLimitsOptions): SessionLimits {
  const openPerClient = new Map<string, number>();
  const sessions = new Map<string, { client: string; timer: NodeJS.Timeout | undefined }>();

  function closeStalled(sessionId: string): void {
    const session = sessions.get(sessionId);
    if (!session) return;
    session.timer = undefined;
    options.logger?.warn({ session: sessionId, client: session.client }, `smtp session closed: ${options.noProgressReason}`);
    for (const connection of server.connections) {
      if (connection.id !== sessionId) continue;
      connection.send(421, `4.4.2 Closing: ${options.noProgressReason} within ${Math.round(options.noProgressMs / 1000)} s`);
      connection.close();
    }
  }

  function arm(sessionId: string): void {
    const session = sessions.get(sessionId);
    if (!session || options.noProgressMs <= 0) return;
    clearTimeout(session.timer);
    session.timer = setTimeout(() => closeStalled(sessionId), options.noProgressMs);
    session.timer.unref();
  }

  return {
    admit({ id, remoteAddress }) {
      const client = clientKey(remoteAddress);
      const open = openPerClient.get(client) ?? 0;
      if (open >= options.maxPerClient) {
        options.logger?.warn({ session: id, remoteAddress, client, open }, 'smtp session refused: too many from this client');
        return false;
      }
      openPerClient.set(client, open + 1);
      sessions.set(id, { client, timer: undefined });
      arm(id);
      return true;
    },
    progressed: arm,
    exempt(sessionId) {
      const session = sessions.get(sessionId);
      if (session) {
        clearTimeout(session.timer);
        session.timer = undefined;
      }
    },
    release(sessionId) {
      const session = sessions.get(sessionId);
      if (!session) return;
      clearTimeout(session.timer);
      sessions.delete(sessionId);
      const open = (openPerClient.get(session.client) ?? 1) - 1;
      if (open > 0) openPerClient.set(session.client, open);
      else openPerClient.delete(session.client);
    },
    openOf(remoteAddress) {
      return openPerClient.get(clientKey(remoteAddress)) ?? 0;
    },
  };
}
