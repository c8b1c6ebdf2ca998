/**
 * The worker's only way to the provider (docs/operations.md#the-relay, `RELAY_URL`). It hands over the stored raw
 * bytes untouched and turns every result, success or failure, into a DeliveryOutcome the worker maps
 * to a status: sent → ProviderSent, rejected → ProviderError, deferred/unreachable → retry or, with the
 * budget spent, ProviderError/Error, invalid → Error.
 */
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { findEhloName } from '../submission/mail-hostname.js';
import { createSmtpPool } from './smtp-pool.js';

/**
 * The relay's answer for one recipient of the attempt: at RCPT (4xx/5xx) or, for the accepted, after DATA; or
 * `suppressed`, the worker's own: the address went on the suppression list after the mail was accepted, so it was
 * not sent to (worker.ts).
 */
export interface RecipientResult {
  address: string;
  outcome: 'accepted' | 'rejected' | 'deferred' | 'suppressed';
  reply: string;
}

export type DeliveryOutcome =
  /**
   * 2xx after DATA. Recipients the relay refused at RCPT while others were accepted are listed in
   * `rejected`; `recipients` says for each one whether the refusal was permanent (5xx) or not (4xx).
   */
  | { kind: 'sent'; reply: string; accepted: string[]; rejected: string[]; recipients?: RecipientResult[]; durationMs: number }
  /** A 5xx: the relay will never take this mail as it is. `recipients` when every recipient was refused at RCPT. */
  | { kind: 'rejected'; code: number; reply: string; recipients?: RecipientResult[]; durationMs: number }
  /** A 4xx: the relay may take it later. `recipients` when every recipient was refused at RCPT (some with 5xx maybe). */
  | { kind: 'deferred'; code: number; reply: string; recipients?: RecipientResult[]; durationMs: number }
  /**
   * No SMTP conversation could carry the mail (connection, timeout, TLS, DNS, relay login): transient.
   * `beforeTransaction`: it failed before MAIL FROM (connect, greeting, TLS, login), so the relay never saw the mail.
   * `beforeMessage`: it failed before any byte of the message was sent (before the relay's 354 to DATA, or before MAIL
   * FROM), so the relay cannot have taken it; without it, the relay may have the mail (a cut while waiting for the
   * reply to the message's end).
   */
  | { kind: 'unreachable'; reply: string; durationMs: number; beforeTransaction?: boolean; beforeMessage?: boolean }
  /** The mail itself cannot be sent (no recipients, unreadable message): permanent. */
  | { kind: 'invalid'; reply: string; durationMs: number };

export interface RelayMessage {
  envelope: { from: string; to: string[] };
  raw: Buffer | string;
}

/** `RELAY_TLS`, `RELAY_TLS_CA`, `RELAY_TLS_INSECURE` (docs/operations.md#the-relay). */
export interface RelayTlsOptions {
  /**
   * require: STARTTLS must succeed (an smtp:// relay without it is not used); opportunistic: STARTTLS
   * whenever the relay offers it; off: never STARTTLS. smtps:// is TLS from the first byte in every mode
   * but off, which config refuses for it.
   */
  mode: 'require' | 'opportunistic' | 'off';
  /** PEM certificates trusted for the relay, in addition to the system's. */
  ca?: Buffer;
  /** Skip certificate checks: encrypts, but anyone on the path can pretend to be the relay. */
  insecure?: boolean;
}

export interface RelayTransportOptions {
  /** Connections kept open to the relay when pooling (5 by default). */
  maxConnections?: number;
  /** Reuse connections across messages; on by default because the worker sends in batches. */
  pool?: boolean;
  /** A pooled connection unused this long is closed with QUIT (30 s by default). */
  idleTimeoutMs?: number;
  /**
   * The EHLO name (`MAIL_HOSTNAME`). Without one, the host name when it is fully qualified, else the
   * address literal of the connection's own address (RFC 5321 §4.1.4), never a made-up loopback literal.
   */
  name?: string;
  tls?: RelayTlsOptions;
  /** Idle time on an open connection before it counts as unreachable. */
  socketTimeoutMs?: number;
  /** Time allowed to open the TCP connection and to receive the greeting. */
  connectionTimeoutMs?: number;
  /** The login, instead of one in the URL (a named relay's, kept apart from its URL: docs/relays.md). */
  auth?: { user: string; pass: string } | undefined;
  /** Signs each message as it is sent (DKIM, dkim.ts); the stored bytes stay as they are. */
  sign?: ((raw: Buffer) => Promise<Buffer>) | undefined;
}

export interface RelayTransport {
  /** Never throws: every failure becomes an outcome. */
  send(message: RelayMessage): Promise<DeliveryOutcome>;
  /** True when the relay answers and accepts our login; for health checks and start-up logs. */
  verify(): Promise<boolean>;
  /** Ends every connection with QUIT, after the sends in flight. */
  close(): Promise<void>;
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
  // The relay offered no STARTTLS and the login was withheld (smtp-pool.ts): a path or relay fault.
  'ENOTLSAUTH',
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
  /** On a refusal at RCPT: the recipient it is about. */
  recipient?: string;
  rejectedErrors?: NodemailerError[];
}

function asNodemailerError(error: unknown): NodemailerError {
  if (error instanceof Error) {
    const fields = error as Error & Partial<NodemailerError>;
    const result: NodemailerError = { message: error.message };
    if (typeof fields.code === 'string') result.code = fields.code;
    if (typeof fields.responseCode === 'number') result.responseCode = fields.responseCode;
    if (typeof fields.response === 'string') result.response = fields.response;
    if (typeof fields.recipient === 'string') result.recipient = fields.recipient;
    if (Array.isArray(fields.rejectedErrors)) result.rejectedErrors = fields.rejectedErrors.map(asNodemailerError);
    return result;
  }
  return { message: String(error) };
}

/** Each refusal at RCPT as a recipient result: a 4xx may succeed later, anything else will not. */
function refusedRecipients(rejections: NodemailerError[]): RecipientResult[] {
  return rejections.flatMap((rejection) =>
    rejection.recipient === undefined
      ? []
      : [
          {
            address: rejection.recipient,
            outcome:
              rejection.responseCode !== undefined && rejection.responseCode >= 400 && rejection.responseCode < 500
                ? 'deferred'
                : 'rejected',
            reply: rejection.response ?? rejection.message,
          } satisfies RecipientResult,
        ],
  );
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

  // Every recipient refused at RCPT: say which refusal was which, so only the 4xx ones are tried again.
  const recipients =
    failure.rejectedErrors && failure.rejectedErrors.length > 0 ? { recipients: refusedRecipients(failure.rejectedErrors) } : {};
  if (code !== undefined && code >= 500 && code < 600) return { kind: 'rejected', code, reply, ...recipients, durationMs };
  if (code !== undefined && code >= 400 && code < 500) return { kind: 'deferred', code, reply, ...recipients, durationMs };
  if (failure.code === 'EENVELOPE' || failure.code === 'EMESSAGE' || failure.code === 'ESTREAM' || failure.code === 'EREQUIRETLS') {
    return { kind: 'invalid', reply, durationMs };
  }
  // An unknown fault is retried: losing a mail to a bug of ours is worse than trying it again
  // until the retry budget ends it as Error.
  return { kind: 'unreachable', reply, durationMs };
}

const CERTIFICATE_FAILURE = /certificate|self[- ]signed|unable to verify|CERT_|altnames|hostname\/IP/i;

/** Explains a TLS failure in terms of the settings that decide it, so the mail's reply names the cause. */
function describeTlsFailure(error: unknown, tlsOptions: RelayTlsOptions): string {
  const failure = error instanceof Error ? error : new Error(String(error));
  const response = (failure as { response?: unknown }).response;
  if (typeof response === 'string' && /STARTTLS/i.test(failure.message)) {
    return `The relay refused STARTTLS (it answered "${response}"); RELAY_TLS=${tlsOptions.mode} needs it: fix the relay or set RELAY_TLS=off`;
  }
  if (CERTIFICATE_FAILURE.test(failure.message)) {
    return `TLS with the relay failed: ${failure.message}. The relay's certificate is checked (RELAY_TLS=${tlsOptions.mode}); trust its CA with RELAY_TLS_CA, or skip the check with RELAY_TLS_INSECURE=on`;
  }
  return `TLS with the relay failed: ${failure.message} (RELAY_TLS=${tlsOptions.mode})`;
}

/** nodemailer refuses a message larger than the relay's advertised SIZE before sending MAIL FROM. */
const SIZE_LIMIT = /larger than allowed (\d+)/;

/** A failed send as an outcome: a size refused before sending, a TLS failure explained, else classifyDeliveryError. */
function describeFailure(error: unknown, size: number, tlsOptions: RelayTlsOptions, durationMs: number): DeliveryOutcome {
  const failure = asNodemailerError(error);
  const sizeLimit = failure.code === 'EMESSAGE' && failure.responseCode === undefined ? SIZE_LIMIT.exec(failure.message) : null;
  if (sizeLimit) {
    // The relay said in its EHLO reply that it takes nothing this large: sending it would only
    // waste the transfer before the same refusal, so it is the relay's permanent answer.
    const reply = `552 5.3.4 Not sent: the message is ${size} bytes and the relay accepts at most ${sizeLimit[1]} (SIZE in its EHLO reply)`;
    return { kind: 'rejected', code: 552, reply, durationMs };
  }
  if (failure.code === 'ETLS' || CERTIFICATE_FAILURE.test(failure.message)) {
    return { kind: 'unreachable', reply: describeTlsFailure(error, tlsOptions), durationMs };
  }
  return classifyDeliveryError(error, durationMs);
}

export function createRelayTransport(url: string, options: RelayTransportOptions = {}): RelayTransport {
  const { pool = true, maxConnections = 5, socketTimeoutMs, connectionTimeoutMs, idleTimeoutMs = 30_000 } = options;
  const tlsOptions: RelayTlsOptions = options.tls ?? { mode: 'opportunistic' };
  // Only scheme, credentials, host and port are read: TLS settings come from RELAY_TLS*, and the EHLO
  // name from MAIL_HOSTNAME, so there is one place for each.
  const parsed = new URL(url);
  const secure = parsed.protocol === 'smtps:';
  const auth =
    options.auth ??
    (parsed.username ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : undefined);
  const name = options.name ?? findEhloName();
  const smtpPool = createSmtpPool({
    // WHATWG URL keeps the brackets of an IPv6 host; a socket wants the bare address.
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost',
    port: parsed.port ? Number(parsed.port) : secure ? 465 : 587,
    secure,
    ...(auth ? { auth } : {}),
    ...(name !== undefined ? { name } : {}),
    startTls: tlsOptions.mode,
    tls: {
      // Node's `ca` replaces the system's trust store; the operator's CA is meant to add to it.
      ...(tlsOptions.ca ? { ca: [...tls.rootCertificates, tlsOptions.ca.toString('utf8')] } : {}),
      rejectUnauthorized: tlsOptions.insecure !== true,
    },
    maxConnections: pool ? maxConnections : 1,
    idleTimeoutMs: pool ? idleTimeoutMs : 0,
    ...(connectionTimeoutMs !== undefined ? { connectionTimeoutMs } : {}),
    ...(socketTimeoutMs !== undefined ? { socketTimeoutMs } : {}),
  });

  return {
    async send(message: RelayMessage): Promise<DeliveryOutcome> {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      if (message.envelope.to.length === 0) {
        return { kind: 'invalid', reply: 'The message has no recipients', durationMs: 0 };
      }
      const stored = typeof message.raw === 'string' ? Buffer.from(message.raw) : message.raw;
      try {
        const raw = options.sign ? await options.sign(stored) : stored;
        const info = await smtpPool.send(message.envelope, raw);
        const recipients: RecipientResult[] = [
          ...info.accepted.map((address) => ({ address, outcome: 'accepted' as const, reply: info.response })),
          ...refusedRecipients(info.rejectedErrors.map(asNodemailerError)),
        ];
        return { kind: 'sent', reply: info.response, accepted: info.accepted, rejected: info.rejected, recipients, durationMs: elapsed() };
      } catch (error) {
        const outcome = describeFailure(error, stored.length, tlsOptions, elapsed());
        if (outcome.kind === 'unreachable' && error instanceof Object) {
          const where = error as { beforeTransaction?: unknown; beforeMessage?: unknown };
          if (where.beforeTransaction === true) outcome.beforeTransaction = true;
          if (where.beforeMessage === true) outcome.beforeMessage = true;
        }
        return outcome;
      }
    },
    async verify(): Promise<boolean> {
      try {
        await smtpPool.verify();
        return true;
      } catch {
        return false;
      }
    },
    close(): Promise<void> {
      return smtpPool.close();
    },
  };
}
