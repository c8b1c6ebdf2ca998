/**
 * The worker's only way to the provider (PRODUCT.md §3 `RELAY_URL`). It hands over the stored raw
 * bytes untouched and turns every result, success or failure, into a DeliveryOutcome the worker maps
 * to a status: sent → ProviderSent, rejected → ProviderError, deferred/unreachable → retry or, with the
 * budget spent, ProviderError/Error, invalid → Error.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';

export type DeliveryOutcome =
  /** 2xx after DATA. Recipients the relay refused at RCPT while others were accepted are listed in `rejected`. */
  | { kind: 'sent'; reply: string; accepted: string[]; rejected: string[]; durationMs: number }
  /** A 5xx: the relay will never take this mail as it is. */
  | { kind: 'rejected'; code: number; reply: string; durationMs: number }
  /** A 4xx: the relay may take it later. */
  | { kind: 'deferred'; code: number; reply: string; durationMs: number }
  /** No SMTP conversation could carry the mail (connection, timeout, TLS, DNS, relay login): transient. */
  | { kind: 'unreachable'; reply: string; durationMs: number }
  /** The mail itself cannot be sent (no recipients, unreadable message): permanent. */
  | { kind: 'invalid'; reply: string; durationMs: number };

export interface RelayMessage {
  envelope: { from: string; to: string[] };
  raw: Buffer | string;
}

export interface RelayTransportOptions {
  /** Connections kept open to the relay when pooling (nodemailer's default is 5). */
  maxConnections?: number;
  /** Reuse connections across messages; on by default because the worker sends in batches. */
  pool?: boolean;
  /** Idle time on an open connection before it counts as unreachable. */
  socketTimeoutMs?: number;
  /** Time allowed to open the TCP connection and to receive the greeting. */
  connectionTimeoutMs?: number;
}

export interface RelayTransport {
  /** Never throws: every failure becomes an outcome. */
  send(message: RelayMessage): Promise<DeliveryOutcome>;
  /** True when the relay answers and accepts our login; for health checks and start-up logs. */
  verify(): Promise<boolean>;
  close(): void;
}

/** Failures before or around the SMTP dialogue: nothing says the mail itself is at fault. */
const UNREACHABLE_CODES = new Set([
  'ECONNECTION',
  'ETIMEDOUT',
  'ESOCKET',
  'EDNS',
  'ETLS',
  // A relay that refuses our credentials or greets badly is a configuration fault of ours; retrying
  // after the operator fixes RELAY_URL must still deliver, so it must not count as the mail's rejection.
  'EAUTH',
  'EHLO',
  'EPROTOCOL',
  'EMAXLIMIT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

interface NodemailerError {
  code?: string;
  responseCode?: number;
  response?: string;
  message: string;
  rejectedErrors?: NodemailerError[];
}

function asNodemailerError(error: unknown): NodemailerError {
  if (error instanceof Error) {
    const fields = error as Error & Partial<NodemailerError>;
    const result: NodemailerError = { message: error.message };
    if (typeof fields.code === 'string') result.code = fields.code;
    if (typeof fields.responseCode === 'number') result.responseCode = fields.responseCode;
    if (typeof fields.response === 'string') result.response = fields.response;
    if (Array.isArray(fields.rejectedErrors)) result.rejectedErrors = fields.rejectedErrors.map(asNodemailerError);
    return result;
  }
  return { message: String(error) };
}

/** Maps a nodemailer failure to an outcome. Exported so the rules can be tested without a network. */
export function classifyDeliveryError(error: unknown, durationMs: number): DeliveryOutcome {
  const failure = asNodemailerError(error);
  const reply = failure.response ?? failure.message;
  if (failure.code !== undefined && UNREACHABLE_CODES.has(failure.code)) {
    return { kind: 'unreachable', reply, durationMs };
  }
  let code = failure.responseCode;
  // When every recipient was refused, nodemailer reports only the last reply. One 4xx among them
  // means a later attempt can still succeed, so the mail is deferred rather than rejected.
  const recipientCodes = (failure.rejectedErrors ?? [])
    .map((rejection) => rejection.responseCode)
    .filter((value): value is number => typeof value === 'number');
  const transientRecipient = recipientCodes.find((value) => value >= 400 && value < 500);
  if (transientRecipient !== undefined) code = transientRecipient;

  if (code !== undefined && code >= 500 && code < 600) return { kind: 'rejected', code, reply, durationMs };
  if (code !== undefined && code >= 400 && code < 500) return { kind: 'deferred', code, reply, durationMs };
  if (failure.code === 'EENVELOPE' || failure.code === 'EMESSAGE' || failure.code === 'ESTREAM' || failure.code === 'EREQUIRETLS') {
    return { kind: 'invalid', reply, durationMs };
  }
  // An unknown fault is retried: losing a mail to a bug of ours is worse than trying it again
  // until the retry budget ends it as Error.
  return { kind: 'unreachable', reply, durationMs };
}

function addressText(address: string | Mail.Address): string {
  return typeof address === 'string' ? address : address.address;
}

/**
 * nodemailer writes the message and the final "." in two writes; with Nagle's algorithm on, the second
 * waits for the peer's delayed ACK, about 45 ms per message (measured on loopback over one pooled
 * connection: 59 → 8 ms per message).
 * nodemailer has no option for TCP_NODELAY, so the socket is opened here and handed over as an
 * already-open `connection`, which nodemailer still upgrades to TLS for smtps:// URLs and STARTTLS.
 */
function openNoDelaySocket(
  options: SMTPTransport.Options,
  callback: (error: Error | null, socketOptions: { connection: net.Socket }) => void,
): void {
  const port = Number(options.port) || (options.secure ? 465 : 587);
  const socket = net.connect({ host: options.host ?? 'localhost', port, noDelay: true });
  callback(null, { connection: socket });
}

export function createRelayTransport(url: string, options: RelayTransportOptions = {}): RelayTransport {
  const { pool = true, maxConnections, socketTimeoutMs, connectionTimeoutMs } = options;
  // nodemailer ignores every other option when handed a URL, so the URL goes in as `url` of an
  // options object, which the transports merge themselves.
  const connection: SMTPTransport.Options = { url };
  if (socketTimeoutMs !== undefined) connection.socketTimeout = socketTimeoutMs;
  if (connectionTimeoutMs !== undefined) {
    connection.connectionTimeout = connectionTimeoutMs;
    connection.greetingTimeout = connectionTimeoutMs;
  }
  connection.getSocket = openNoDelaySocket;
  const transporter = pool
    ? nodemailer.createTransport(
        // maxMessages: nodemailer retires a pooled connection after 100 messages by default, and a new
        // connection waits for the relay's greeting (100 ms on smtp-server and many real servers).
        new SMTPPool({ ...connection, pool: true, maxMessages: Infinity, ...(maxConnections !== undefined ? { maxConnections } : {}) }),
      )
    : nodemailer.createTransport(new SMTPTransport(connection));
  // An unhandled 'error' event would crash the process; failures of a send arrive through its promise.
  transporter.on('error', () => undefined);

  return {
    async send(message: RelayMessage): Promise<DeliveryOutcome> {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      if (message.envelope.to.length === 0) {
        return { kind: 'invalid', reply: 'The message has no recipients', durationMs: 0 };
      }
      try {
        // `raw` makes nodemailer send the bytes as they are, with the envelope given separately.
        const info = await transporter.sendMail({ envelope: message.envelope, raw: message.raw });
        return {
          kind: 'sent',
          reply: String(info.response),
          accepted: info.accepted.map(addressText),
          rejected: info.rejected.map(addressText),
          durationMs: elapsed(),
        };
      } catch (error) {
        return classifyDeliveryError(error, elapsed());
      }
    },
    async verify(): Promise<boolean> {
      try {
        return await transporter.verify();
      } catch {
        return false;
      }
    },
    close(): void {
      transporter.close();
    },
  };
}
