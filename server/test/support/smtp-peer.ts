/**
 * A real SMTP server (smtp-server) on a loopback port chosen by the OS: the one way tests stand up a peer.
 * The test passes the handlers and options it needs; the defaults are those of a quiet test peer (no reverse
 * lookup, no logging, any AUTH optional, a short close timeout). Connection errors (a client that drops a TLS
 * handshake, a process killed mid-session) are the client's doing and are ignored.
 */
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export interface SmtpPeer {
  server: SMTPServer;
  port: number;
  /** smtp://127.0.0.1:port */
  url: string;
  close(): Promise<void>;
}

/** `port`: 0 (the default) lets the OS choose; a given one brings a peer back where a test closed it. */
export async function startSmtpPeer(options: SMTPServerOptions = {}, port = 0): Promise<SmtpPeer> {
  const server = new SMTPServer({ authOptional: true, disableReverseLookup: true, logger: false, closeTimeout: 1000, ...options });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  const address = server.server.address();
  if (typeof address !== 'object' || address === null) throw new Error('The SMTP peer has no address');
  return {
    server,
    port: address.port,
    url: `smtp://127.0.0.1:${address.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
