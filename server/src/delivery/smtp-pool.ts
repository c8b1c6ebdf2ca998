/**
 * A small pool of SMTP connections to one relay, built on nodemailer's `SMTPConnection` (the protocol
 * engine) instead of nodemailer's `SMTPPool`, because the pool does not behave like a well-mannered MTA
 * (read from nodemailer 7.0.13, lib/smtp-pool/pool-resource.js and lib/smtp-connection/index.js):
 * - `PoolResource.send` calls `connection.close()` on every failed send, including a mail whose
 *   recipients were all refused at RCPT: no RSET, the TCP connection is dropped, and the next mail pays a
 *   new connection, greeting, EHLO and login;
 * - `SMTPConnection.close()` ends the socket without QUIT, and the pool has no idle timer, so idle
 *   connections were left for the relay's timeout to cut and the pool's close() never says QUIT;
 * - `sendMail({raw})` computes no message size, so `SIZE=` and `BODY=8BITMIME` were never declared.
 * Here a refused mail is followed by RSET and the connection is kept; an idle connection and every
 * connection at close() end with QUIT; every MAIL FROM declares `SIZE=` (when the relay advertises SIZE)
 * and `BODY=8BITMIME` (when the message has 8-bit bytes and the relay advertises 8BITMIME).
 */
import net from 'node:net';
import { Readable } from 'node:stream';
import type tls from 'node:tls';
import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';

export interface SmtpPoolOptions {
  host: string;
  port: number;
  /** Implicit TLS from the first byte (smtps://). */
  secure: boolean;
  auth?: { user: string; pass: string };
  /** The EHLO name; without one, the address literal of the connection's local address. */
  name?: string;
  /** STARTTLS policy: required, used when offered, or never. */
  startTls: 'require' | 'opportunistic' | 'off';
  /** Options for the TLS handshake: CA, certificate checks. */
  tls: tls.ConnectionOptions;
  maxConnections: number;
  /** A connection unused this long is closed with QUIT; 0 closes it after each mail. */
  idleTimeoutMs: number;
  connectionTimeoutMs?: number;
  socketTimeoutMs?: number;
}

export interface SmtpSendResult {
  response: string;
  accepted: string[];
  rejected: string[];
  rejectedErrors: SMTPConnection.SMTPError[];
}

export interface SmtpPool {
  send(envelope: { from: string; to: string[] }, raw: Buffer): Promise<SmtpSendResult>;
  /** Opens one connection (greeting, EHLO, TLS, login) and puts it in the pool; throws the failure. */
  verify(): Promise<void>;
  /** QUIT on every connection, waiting for sends in flight; resolves when all are closed. */
  close(): Promise<void>;
}

/** Failures after which the dialogue is still in step: the relay refused the mail, not the session. */
const TRANSACTION_FAILURES = new Set(['EENVELOPE', 'EMESSAGE']);

/** How long a QUIT may wait for the relay's 221 before the socket is cut. */
const QUIT_TIMEOUT_MS = 2_000;

interface Slot {
  connection: SMTPConnection;
  closed: boolean;
  /** The pending operation's reject: a connection error ends it even when nodemailer has no callback left. */
  failCurrent: ((error: Error) => void) | undefined;
  idleTimer: NodeJS.Timeout | undefined;
}

/** RFC 5321 §4.1.3 address literal of the local end, e.g. `[192.0.2.7]` or `[IPv6:2001:db8::7]`. */
function addressLiteral(address: string): string {
  const ipv4 = address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
  return net.isIPv6(ipv4) ? `[IPv6:${ipv4}]` : `[${ipv4}]`;
}

/**
 * The message as nodemailer reads it, which it does only once the relay answered DATA with 354: until its first byte
 * is asked for, nothing of the message has left, so a send that fails before then cannot have been taken by the relay
 * (`beforeMessage`: relay-router.ts moves such a mail on to the next relay of its route).
 */
class MessageSource extends Readable {
  isHandedOver = false;

  constructor(private readonly raw: Buffer) {
    super();
  }

  override _read(): void {
    if (this.isHandedOver) return;
    this.isHandedOver = true;
    this.push(this.raw);
    this.push(null);
  }
}

function has8BitBytes(raw: Buffer): boolean {
  for (const byte of raw) if (byte >= 0x80) return true;
  return false;
}

export function createSmtpPool(options: SmtpPoolOptions): SmtpPool {
  const slots = new Set<Slot>();
  const idle: Slot[] = [];
  const waiters: Array<() => void> = [];
  let opening = 0;
  let closing = false;
  let allClosed: (() => void) | undefined;

  const wakeOne = () => waiters.shift()?.();

  function forget(slot: Slot): void {
    if (!slots.delete(slot)) return;
    clearTimeout(slot.idleTimer);
    const index = idle.indexOf(slot);
    if (index !== -1) idle.splice(index, 1);
    wakeOne();
    endCloseWhenIdle();
  }

  /** A close() waiting for the last connection ends once none is open or opening. */
  function endCloseWhenIdle(): void {
    if (closing && slots.size === 0 && opening === 0) allClosed?.();
  }

  /** Runs one nodemailer operation; a connection error or close during it rejects it too. */
  function run<T>(slot: Slot, operation: (done: (error: Error | null | undefined, value: T) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (error: Error | null | undefined, value: T) => {
        if (settled) return;
        settled = true;
        slot.failCurrent = undefined;
        if (error) reject(error);
        else resolve(value);
      };
      slot.failCurrent = (error) => finish(error, undefined as T);
      if (slot.closed) return finish(Object.assign(new Error('Connection closed'), { code: 'ECONNECTION' }), undefined as T);
      operation(finish);
    });
  }

  async function open(): Promise<Slot> {
    // nodemailer writes the message and the final "." in two writes; with Nagle's algorithm the second
    // waits for the peer's delayed ACK, about 45 ms per message on loopback (measured 59 → 8 ms). It has
    // no option for TCP_NODELAY, so the socket is opened here; it is still upgraded for smtps:// and STARTTLS.
    const socket = net.connect({ host: options.host, port: options.port, noDelay: true });
    const connectionOptions: SMTPConnection.Options = {
      host: options.host,
      port: options.port,
      secure: options.secure,
      // Replaced below once the socket knows its own address; nodemailer's fallback is `[127.0.0.1]`.
      name: options.name ?? 'localhost',
      tls: options.tls,
      requireTLS: options.startTls === 'require',
      ignoreTLS: options.startTls === 'off',
      connection: socket,
    };
    if (options.connectionTimeoutMs !== undefined) {
      connectionOptions.connectionTimeout = options.connectionTimeoutMs;
      connectionOptions.greetingTimeout = options.connectionTimeoutMs;
    }
    if (options.socketTimeoutMs !== undefined) connectionOptions.socketTimeout = options.socketTimeoutMs;
    const connection = new SMTPConnection(connectionOptions);
    if (options.name === undefined) {
      // The greeting, and so EHLO, can only come after the TCP connection is up.
      socket.once('connect', () => {
        connection.name = addressLiteral(socket.localAddress ?? '127.0.0.1');
      });
    }
    const slot: Slot = { connection, closed: false, failCurrent: undefined, idleTimer: undefined };
    slots.add(slot);
    connection.on('error', (error) => {
      slot.closed = true;
      slot.failCurrent?.(error);
      connection.close();
    });
    connection.on('end', () => {
      slot.closed = true;
      slot.failCurrent?.(Object.assign(new Error('The relay closed the connection'), { code: 'ECONNECTION' }));
      forget(slot);
    });
    try {
      await run<undefined>(slot, (done) => connection.connect((error) => done(error, undefined)));
      if (options.auth) {
        // An attacker on the path can strip STARTTLS from the EHLO reply; nodemailer would then log in
        // in clear. The password stays unsent unless the operator chose RELAY_TLS=off.
        if (!connection.secure && options.startTls !== 'off') {
          throw Object.assign(
            new Error(
              "Not logged in to the relay: it offered no STARTTLS, and RELAY_URL's credentials are never sent unencrypted. Make the relay offer STARTTLS, use smtps://, or set RELAY_TLS=off to accept a login in clear",
            ),
            { code: 'ENOTLSAUTH' },
          );
        }
        const credentials = options.auth;
        await run<undefined>(slot, (done) => connection.login({ credentials }, (error) => done(error, undefined)));
      }
      return slot;
    } catch (error) {
      discard(slot);
      throw error;
    }
  }

  function discard(slot: Slot): void {
    slot.closed = true;
    slot.connection.close();
    forget(slot);
  }

  function quit(slot: Slot): void {
    if (slot.closed) return forget(slot);
    slot.closed = true;
    clearTimeout(slot.idleTimer);
    // QUIT, then nodemailer closes on the 221; a relay that never answers is cut after a short wait.
    const timer = setTimeout(() => slot.connection.close(), QUIT_TIMEOUT_MS);
    timer.unref();
    slot.connection.once('end', () => clearTimeout(timer));
    try {
      slot.connection.quit();
    } catch {
      slot.connection.close();
    }
  }

  async function acquire(): Promise<Slot> {
    for (;;) {
      if (closing) throw Object.assign(new Error('The relay connection pool is closed'), { code: 'ECONNECTION' });
      const reused = idle.pop();
      if (reused) {
        clearTimeout(reused.idleTimer);
        if (!reused.closed) return reused;
        forget(reused);
        continue;
      }
      if (slots.size + opening < options.maxConnections) {
        opening += 1;
        try {
          return await open();
        } finally {
          opening -= 1;
          // A connection that failed while opening was forgotten before this count fell: a close() waiting
          // for it would otherwise wait out its whole bound (17 s at the default timeouts).
          endCloseWhenIdle();
        }
      }
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  }

  function release(slot: Slot): void {
    if (slot.closed) return forget(slot);
    if (closing || options.idleTimeoutMs <= 0) return quit(slot);
    idle.push(slot);
    slot.idleTimer = setTimeout(() => {
      const index = idle.indexOf(slot);
      if (index !== -1) idle.splice(index, 1);
      quit(slot);
    }, options.idleTimeoutMs);
    slot.idleTimer.unref();
    wakeOne();
  }

  /** After a refused mail the session stays usable once RSET clears the transaction. */
  async function resetOrDiscard(slot: Slot): Promise<void> {
    try {
      await run<undefined>(slot, (done) => slot.connection.reset((error) => done(error, undefined)));
      release(slot);
    } catch {
      discard(slot);
    }
  }

  return {
    async send(envelope, raw) {
      let slot: Slot;
      try {
        slot = await acquire();
      } catch (error) {
        // No transaction began: the relay never saw this mail (a router may take it elsewhere, relay-router.ts).
        if (error && typeof error === 'object') Object.assign(error, { beforeTransaction: true, beforeMessage: true });
        throw error;
      }
      const source = new MessageSource(raw);
      try {
        const info = await run<SMTPConnection.SentMessageInfo>(slot, (done) =>
          slot.connection.send(
            { from: envelope.from, to: envelope.to, size: raw.length, use8BitMime: has8BitBytes(raw) },
            source,
            (error, result) => done(error, result),
          ),
        );
        release(slot);
        return {
          response: info.response,
          accepted: info.accepted,
          rejected: info.rejected,
          rejectedErrors: info.rejectedErrors ?? [],
        };
      } catch (error) {
        // Cut before the relay asked for the message (a connection lost at MAIL FROM, RCPT or DATA): not taken.
        if (!source.isHandedOver && error && typeof error === 'object') Object.assign(error, { beforeMessage: true });
        const code = (error as { code?: unknown }).code;
        if (typeof code === 'string' && TRANSACTION_FAILURES.has(code) && !slot.closed) await resetOrDiscard(slot);
        else discard(slot);
        throw error;
      }
    },
    async verify() {
      release(await acquire());
    },
    close() {
      if (closing) return Promise.resolve();
      closing = true;
      for (const waiter of waiters.splice(0)) waiter();
      for (const slot of idle.splice(0)) quit(slot);
      if (slots.size === 0 && opening === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        allClosed = resolve;
        // Sends still in flight finish or time out on their own; this only bounds the wait for them.
        // At most 30 s: a relay that holds a send for its whole reply timeout (ten minutes) must not hold a stop.
        setTimeout(resolve, Math.min(30_000, options.socketTimeoutMs ?? 60_000) + QUIT_TIMEOUT_MS).unref();
      });
    },
  };
}
