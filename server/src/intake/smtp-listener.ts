/**
 * The SMTP submission listener (docs/api.md#smtp-submission, `SMTP_PORT`): applications that speak SMTP hand mail to
 * Outbox here. AUTH is required and the password is an API key; the envelope decides the recipients; the
 * message is kept as sent except for what message-headers.ts changes (bare LF → CRLF, Message-ID and Date
 * added when missing, Bcc removed). What to do with an accepted mail is the caller's `accept`, so this
 * module knows nothing of the store.
 */
import type { Socket } from 'node:net';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { MAX_RECIPIENTS_PER_MAIL } from '@outbox/contract';
import type { Logger } from '../logger.js';
import { closeSmtp, createGuardedSmtpServer, listenSmtp, readMessage, smtpError } from '../net/smtp-server.js';
import { clientKey } from '../net/smtp-session-limits.js';
import { isValidAddress } from '../submission/message-builder.js';
import { checkLineBreaks, ensureDate, ensureMessageId, removeBcc, takeFields } from './message-headers.js';
import { LANE_CODES, LANE_HEADER, LANES, SEND_AT_HEADER, type Lane } from '@outbox/contract';
import { readSendAt } from '../submission/scheduled-send.js';

export { ensureMessageId, type MessageIdResult } from './message-headers.js';

export interface SmtpSubmission<Principal> {
  principal: Principal;
  envelopeFrom: string;
  envelopeTo: string[];
  raw: Buffer;
  /** The Message-ID header value with its angle brackets, as found or as added. */
  messageId: string;
  /** The X-Outbox-Send-At header's instant (the header is removed); null: send at once. */
  sendAt: number | null;
  /** The X-Outbox-Lane header's lane code (the header is removed); null: the application's lane. */
  lane: number | null;
}

export interface SmtpListenerOptions<Principal> {
  host?: string;
  port: number;
  maxMessageBytes?: number;
  /** With a key and certificate, STARTTLS is offered; without, the listener is meant for loopback. */
  tls?: { key: Buffer; cert: Buffer };
  logger?: Logger;
  /** Resolves the API key given as the AUTH password, or undefined when it is not valid. */
  authenticate(apiKey: string): Promise<Principal | undefined>;
  /**
   * Queues the mail. An error carrying a numeric `smtpCode` or `responseCode` (4xx/5xx) is answered with
   * that code and its message; any other error becomes a 451 so the client retries.
   */
  accept(submission: SmtpSubmission<Principal>): Promise<{ id: number }>;
  /** How long close() lets open sessions finish before cutting them. */
  closeTimeoutMs?: number;
  /** RCPT TO past this many in one mail answers 452 (RFC 5321 §4.5.3.1.10); the JSON API's limit by default. */
  maxRecipients?: number;
  /** Sessions open at once; one more is answered 421 and closed. */
  maxConnections?: number;
  /** Sessions open at once from one client (an IPv4 address or an IPv6 /64); one more from it is answered 421 and closed. */
  maxConnectionsPerClient?: number;
  /** A session that has not logged in this long (NOOP or RSET do not count) is answered 421 and closed; 0: never. */
  noProgressMs?: number;
  /**
   * The wait before answering a failed AUTH, doubled for each further failure from the same address
   * within 15 minutes, up to 16 times this: guessing keys costs time, a typo costs a second.
   */
  authFailureDelayMs?: number;
  /** The acceptance time written into an added Date header; Date.now by default. */
  now?: () => number;
}

export interface SmtpListener {
  port: number;
  close(): Promise<void>;
}

const DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

/** The SMTP code an accept() error asks for, when it names a valid failure code. */
function requestedCode(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const fields = error as { smtpCode?: unknown; responseCode?: unknown };
  const code = typeof fields.smtpCode === 'number' ? fields.smtpCode : fields.responseCode;
  return typeof code === 'number' && Number.isInteger(code) && code >= 400 && code < 600 ? code : undefined;
}

/**
 * Replies written in one turn of the event loop leave in one write. smtp-server writes each reply on its
 * own, so a pipelining client (RFC 2920), whose next MAIL FROM, RCPT TO and DATA arrive with the message,
 * got the message's 250 and the three replies after it in four writes, four segments and up to four
 * wake-ups on each side. Corking the socket for the rest of the turn sends them together; nothing is held
 * past the turn, and each 250 still leaves only once smtp-server writes it, after the commit.
 * A 220 is written at once: the greeting, and STARTTLS's "Ready", after which smtp-server hands the socket
 * to TLS in the same turn, so nothing may wait behind it.
 */
function coalesceReplies(socket: Socket): void {
  const write = socket.write;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = function (this: Socket, ...args: unknown[]) {
    const [chunk] = args;
    if (typeof chunk === 'string' && chunk.startsWith('220')) {
      if (corked) uncork();
    } else if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as Socket['write'];
}

export async function startSmtpListener<Principal>(options: SmtpListenerOptions<Principal>): Promise<SmtpListener> {
  const {
    host = '127.0.0.1',
    port,
    maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES,
    tls,
    logger,
    authenticate,
    accept,
    closeTimeoutMs = 10_000,
    maxRecipients = MAX_RECIPIENTS_PER_MAIL,
    maxConnections = 100,
    maxConnectionsPerClient = 10,
    noProgressMs = 60_000,
    authFailureDelayMs = 1_000,
    now = Date.now,
  } = options;
  const authFailures = createAuthFailureTracker(authFailureDelayMs, now);
  // smtp-server keeps `user` untyped; the principal is kept here, typed, per session.
  const principals = new Map<string, Principal>();
  /** Each session's key, in memory only (never logged), to ask the store again for every message. */
  const sessionKeys = new Map<string, string>();
  // One client (an IPv4 address or an IPv6 /64) must not take every session of maxConnections from the others, nor
  // hold one without logging in (net/smtp-session-limits.ts).
  const { server, limits } = createGuardedSmtpServer(
    {
      name: 'outbox',
      banner: 'Outbox submission: AUTH with an API key as the password',
      authMethods: ['PLAIN', 'LOGIN'],
      authOptional: false,
      authRequiredMessage: '5.7.0 Authentication required: AUTH PLAIN or LOGIN with an API key as the password',
      // Without a certificate the listener is for loopback clients, where a plaintext AUTH exposes nothing.
      allowInsecureAuth: tls === undefined,
      ...(tls ? { key: tls.key, cert: tls.cert } : { disabledCommands: ['STARTTLS'] }),
      size: maxMessageBytes,
      onAuth(auth, session, callback) {
        const apiKey = auth.password ?? '';
        authenticate(apiKey).then(
          (principal) => {
            if (principal === undefined) {
              const delayMs = authFailures.fail(clientKey(session.remoteAddress));
              logger?.warn({ session: session.id, remoteAddress: session.remoteAddress, delayMs }, 'smtp auth failed');
              const timer = setTimeout(() => callback(smtpError(535, '5.7.8 Authentication failed')), delayMs);
              timer.unref();
              return;
            }
            authFailures.succeed(clientKey(session.remoteAddress));
            limits.exempt(session.id);
            principals.set(session.id, principal);
            sessionKeys.set(session.id, apiKey);
            // smtp-server only needs a truthy user; the key itself must not end up in its logs.
            callback(null, { user: session.id });
          },
          (error: unknown) => {
            logger?.error({ err: error, session: session.id }, 'smtp auth lookup failed');
            callback(smtpError(454, '4.7.0 Temporary authentication failure, try again'));
          },
        );
      },
      onMailFrom(address: SMTPServerAddress, session, callback) {
        // The null sender `<>` (RFC 5321 §4.5.5): auto-replies and bounces (RFC 3834) must not be answered.
        if (address.address !== '' && !isValidAddress(address.address)) {
          return callback(smtpError(553, `5.1.7 Sender address <${address.address}> is not valid`));
        }
        return callback();
      },
      onRcptTo(address: SMTPServerAddress, session, callback) {
        if (!isValidAddress(address.address)) {
          return callback(smtpError(553, `5.1.3 Recipient address <${address.address}> is not valid`));
        }
        if (session.envelope.rcptTo.length >= maxRecipients) {
          // 452 lets the client send the rest in another transaction (RFC 5321 §4.5.3.1.10).
          return callback(smtpError(452, `4.5.3 Too many recipients: at most ${maxRecipients} per mail`));
        }
        return callback();
      },
      onData(stream, session, callback) {
        handleData(stream, session).then(
          (reply) => callback(null, reply),
          (error: Error) => callback(error),
        );
      },
      onClose(session) {
        principals.delete(session.id);
        sessionKeys.delete(session.id);
      },
    },
    { maxConnections, maxConnectionsPerClient, noProgressMs, noProgressReason: 'no AUTH', closeTimeoutMs, logger },
  );
  server.on('error', (error) => logger?.warn({ err: error }, 'smtp listener connection error'));
  // Before smtp-server's own listener, so that every reply of the session goes through it.
  server.server.prependListener('connection', coalesceReplies);

  async function handleData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const received = await readMessage(stream);
    if (stream.sizeExceeded) {
      throw smtpError(552, `5.3.4 Message too big: the limit is ${maxMessageBytes} bytes`);
    }
    let principal = principals.get(session.id);
    if (principal === undefined) {
      // smtp-server refuses DATA without AUTH, so this only happens if that guarantee breaks.
      throw smtpError(530, '5.7.0 Authentication required');
    }
    // The key is asked of the store again for every mail, as an HTTP submission's is: a session that authenticated
    // before its application was revoked (or before its rotation's grace ended) sends no more. Asked here, after the
    // message, not at MAIL FROM: this reply waits for the store's commit anyway, while an answer to MAIL FROM that
    // waited for the store would split the replies to a pipelined burst (RFC 2920) into several writes.
    const apiKey = sessionKeys.get(session.id);
    if (apiKey !== undefined) {
      const current = await authenticate(apiKey).catch((error: unknown) => {
        logger?.error({ err: error, session: session.id }, 'smtp auth lookup failed');
        throw smtpError(451, '4.3.0 Temporary failure, try again');
      });
      if (current === undefined) {
        logger?.warn({ session: session.id, remoteAddress: session.remoteAddress }, 'smtp key revoked during the session');
        throw smtpError(535, '5.7.8 Authentication failed: the API key was revoked; the message was not accepted');
      }
      principal = current;
      principals.set(session.id, current);
    }
    const lines = checkLineBreaks(received);
    if (!lines.ok) {
      logger?.warn({ session: session.id, offset: lines.offset }, 'smtp submission refused: bare CR');
      throw smtpError(
        554,
        `5.6.0 Bare CR (a CR not followed by LF) at byte ${lines.offset}: lines must end with CRLF; the message was not accepted`,
      );
    }
    const acceptedAt = now();
    const scheduled = takeFields(lines.raw, SEND_AT_HEADER);
    if (scheduled.values.length > 1) {
      throw smtpError(
        554,
        `5.6.0 The message has ${scheduled.values.length} ${SEND_AT_HEADER} headers; give one; the message was not accepted`,
      );
    }
    const sendAt = readSendAt(scheduled.values[0], { now: acceptedAt, field: `The ${SEND_AT_HEADER} header`, headerForm: true });
    if (!sendAt.ok) throw smtpError(554, `5.6.0 ${sendAt.problem}; the message was not accepted`);
    const laneField = takeFields(scheduled.raw, LANE_HEADER);
    const laneName = laneField.values.length === 1 ? laneField.values[0]!.toLowerCase() : undefined;
    if (laneField.values.length > 1 || (laneName !== undefined && !(LANES as readonly string[]).includes(laneName))) {
      throw smtpError(554, `5.6.0 The ${LANE_HEADER} header must appear once, as ${LANES.join(' or ')}; the message was not accepted`);
    }
    const lane = laneName === undefined ? null : LANE_CODES[laneName as Lane];
    const withDate = ensureDate(laneField.raw, acceptedAt).raw;
    const { raw, messageId } = ensureMessageId(removeBcc(withDate).raw);
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const envelopeTo = session.envelope.rcptTo.map((recipient) => recipient.address);
    try {
      const { id } = await accept({ principal, envelopeFrom, envelopeTo, raw, messageId, sendAt: sendAt.at, lane });
      logger?.info({ mailId: id, messageId, session: session.id }, 'smtp submission accepted');
      return `OK: queued as ${id}`;
    } catch (error) {
      const code = requestedCode(error);
      if (code !== undefined) {
        const message = error instanceof Error ? error.message : String(error);
        logger?.warn({ err: error, messageId, session: session.id, code }, 'smtp submission refused');
        throw smtpError(code, message);
      }
      logger?.error({ err: error, messageId, session: session.id }, 'smtp submission failed');
      throw smtpError(451, '4.3.0 Temporary failure, try again');
    }
  }

  const boundPort = await listenSmtp(server, port, host);
  logger?.info({ port: boundPort, tls: tls !== undefined }, 'smtp listener listening');

  return {
    port: boundPort,
    close: () => closeSmtp(server),
  };
}

const AUTH_FAILURE_MEMORY_MS = 15 * 60_000;
const AUTH_FAILURE_ADDRESSES = 10_000;

/** Failed AUTH per client address, for the growing delay; bounded so a scan cannot grow it without end. */
function createAuthFailureTracker(baseDelayMs: number, now: () => number) {
  const failures = new Map<string, { count: number; lastAt: number }>();
  return {
    /** Counts a failure and returns how long to wait before answering it. */
    fail(address: string): number {
      const at = now();
      const previous = failures.get(address);
      const count = previous && at - previous.lastAt < AUTH_FAILURE_MEMORY_MS ? previous.count + 1 : 1;
      failures.delete(address); // re-inserted last: the Map's order is then least recently failed first
      failures.set(address, { count, lastAt: at });
      if (failures.size > AUTH_FAILURE_ADDRESSES) failures.delete(failures.keys().next().value!);
      return baseDelayMs * 2 ** Math.min(count - 1, 4);
    },
    succeed(address: string): void {
      failures.delete(address);
    },
  };
}
