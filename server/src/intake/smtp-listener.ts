/**
 * The SMTP submission listener (PRODUCT.md §2, `SMTP_PORT`): applications that speak SMTP hand mail to
 * Outbox here. AUTH is required and the password is an API key; the envelope decides the recipients; the
 * message is kept exactly as sent, except that a Message-ID is added when missing, because the
 * Message-ID is fixed at acceptance (PRODUCT.md §1). What to do with an accepted mail is the caller's
 * `accept`, so this module knows nothing of the store.
 */
import { SMTPServer } from 'smtp-server';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { createMessageId, isValidAddress } from '../mail/message-builder.js';

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface SmtpSubmission<Principal> {
  principal: Principal;
  envelopeFrom: string;
  envelopeTo: string[];
  raw: Buffer;
  /** The Message-ID header value with its angle brackets, as found or as added. */
  messageId: string;
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
}

export interface SmtpListener {
  port: number;
  close(): Promise<void>;
}

const DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

function smtpError(responseCode: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode });
}

/** The SMTP code an accept() error asks for, when it names a valid failure code. */
function requestedCode(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const fields = error as { smtpCode?: unknown; responseCode?: unknown };
  const code = typeof fields.smtpCode === 'number' ? fields.smtpCode : fields.responseCode;
  return typeof code === 'number' && Number.isInteger(code) && code >= 400 && code < 600 ? code : undefined;
}

export interface MessageIdResult {
  raw: Buffer;
  messageId: string;
  added: boolean;
}

/**
 * Finds the Message-ID in the header block (up to the first empty line), unfolding continuation lines,
 * or prepends a new one. The bytes of a message that has one are returned unchanged.
 */
export function ensureMessageId(raw: Buffer, createId: () => string = createMessageId): MessageIdResult {
  // latin1 maps every byte to one character, so offsets stay byte offsets and nothing is re-encoded.
  const text = raw.toString('latin1');
  const lineBreak = /^[^\n]*\r\n/.test(text) || !text.includes('\n') ? '\r\n' : '\n';
  let current: { name: string; value: string } | undefined;
  let found: string | undefined;
  const finish = () => {
    if (found === undefined && current && current.name.toLowerCase() === 'message-id') {
      const value = current.value.trim();
      if (value.length > 0) found = value;
    }
  };
  let position = 0;
  while (position < text.length) {
    const end = text.indexOf('\n', position);
    const lineEnd = end === -1 ? text.length : end;
    const line = text.slice(position, lineEnd).replace(/\r$/, '');
    position = lineEnd + 1;
    if (line.length === 0) break; // the empty line that ends the header block
    if (/^[ \t]/.test(line)) {
      // A folded continuation of the previous field (RFC 5322 §2.2.3).
      if (current) current.value += line;
      continue;
    }
    finish();
    const colon = line.indexOf(':');
    // `Name :` with space before the colon is obsolete syntax (RFC 5322 §4.5) that mail still carries.
    current = colon > 0 ? { name: line.slice(0, colon).trimEnd(), value: line.slice(colon + 1) } : undefined;
  }
  finish();
  if (found !== undefined) return { raw, messageId: found, added: false };
  const messageId = createId();
  return {
    raw: Buffer.concat([Buffer.from(`Message-ID: ${messageId}${lineBreak}`, 'latin1'), raw]),
    messageId,
    added: true,
  };
}

function readStream(stream: SMTPServerDataStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = true;
    stream.on('data', (chunk: Buffer) => {
      // Past the limit the bytes are drained but not kept, so an oversize message cannot exhaust memory.
      if (stream.sizeExceeded) kept = false;
      if (kept) chunks.push(chunk);
    });
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
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
  } = options;
  // smtp-server keeps `user` untyped; the principal is kept here, typed, per session.
  const principals = new Map<string, Principal>();

  const server = new SMTPServer({
    name: 'outbox',
    banner: 'Outbox submission: AUTH with an API key as the password',
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: false,
    authRequiredMessage: '5.7.0 Authentication required: AUTH PLAIN or LOGIN with an API key as the password',
    // Without a certificate the listener is for loopback clients, where a plaintext AUTH exposes nothing.
    allowInsecureAuth: tls === undefined,
    ...(tls ? { key: tls.key, cert: tls.cert } : { disabledCommands: ['STARTTLS'] }),
    size: maxMessageBytes,
    disableReverseLookup: true,
    closeTimeout: closeTimeoutMs,
    logger: false,
    onAuth(auth, session, callback) {
      const apiKey = auth.password ?? '';
      authenticate(apiKey).then(
        (principal) => {
          if (principal === undefined) {
            logger?.warn({ session: session.id, remoteAddress: session.remoteAddress }, 'smtp auth failed');
            return callback(smtpError(535, '5.7.8 Authentication failed'));
          }
          principals.set(session.id, principal);
          // smtp-server only needs a truthy user; the key itself must not end up in its logs.
          callback(null, { user: session.id });
        },
        (error: unknown) => {
          logger?.error({ err: error, session: session.id }, 'smtp auth lookup failed');
          callback(smtpError(454, '4.7.0 Temporary authentication failure, try again'));
        },
      );
    },
    onMailFrom(address: SMTPServerAddress, _session, callback) {
      if (!isValidAddress(address.address)) {
        return callback(smtpError(553, `5.1.7 Sender address <${address.address}> is not valid`));
      }
      return callback();
    },
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      if (!isValidAddress(address.address)) {
        return callback(smtpError(553, `5.1.3 Recipient address <${address.address}> is not valid`));
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
    },
  });
  server.on('error', (error) => logger?.warn({ err: error }, 'smtp listener connection error'));

  async function handleData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const received = await readStream(stream);
    if (stream.sizeExceeded) {
      throw smtpError(552, `5.3.4 Message too big: the limit is ${maxMessageBytes} bytes`);
    }
    const principal = principals.get(session.id);
    if (principal === undefined) {
      // smtp-server refuses DATA without AUTH, so this only happens if that guarantee breaks.
      throw smtpError(530, '5.7.0 Authentication required');
    }
    const { raw, messageId } = ensureMessageId(received);
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const envelopeTo = session.envelope.rcptTo.map((recipient) => recipient.address);
    try {
      const { id } = await accept({ principal, envelopeFrom, envelopeTo, raw, messageId });
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

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const address = server.server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  logger?.info({ port: boundPort, tls: tls !== undefined }, 'smtp listener listening');

  return {
    port: boundPort,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
