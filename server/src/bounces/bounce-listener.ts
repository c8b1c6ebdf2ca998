/**
 * The bounce listener (`BOUNCE_SMTP_PORT`, docs/bounces.md): the SMTP server an MX for `BOUNCE_DOMAIN` hands
 * reports to. No AUTH (the reporting MTAs are strangers); a RCPT is accepted only for a valid return path (its
 * HMAC checked), so nobody can file a report against a mail they never received. 1 MiB per message, sessions and
 * messages per client bounded like the submission listener's. What to do with a report is the caller's
 * `receive`, so this module knows nothing of the store.
 */
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { AppError } from '../errors.js';
import { closeSmtp, createGuardedSmtpServer, listenSmtp, readMessage, smtpError } from '../net/smtp-server.js';
import { clientKey } from '../net/smtp-session-limits.js';
import type { Logger } from '../logger.js';
import { isStoreFullError } from '../store-errors.js';

export interface BounceListenerOptions {
  host?: string;
  port: number;
  /** Accepts a RCPT address: true when it is a return path of ours with a valid HMAC. */
  isReturnPath(address: string): boolean | Promise<boolean>;
  /**
   * Keeps and applies one report; a rejection answers 451 (452 for a full store) so the reporting MTA retries.
   * reportId null: nothing new in it, so not kept again.
   */
  receive(report: { envelopeFrom: string; envelopeTo: string[]; raw: Buffer }): Promise<{ reportId: number | null }>;
  /** False while the store's disk reserve is reached (store/space-reserve.ts): MAIL FROM answers 452 then. */
  hasRoom?: () => Promise<boolean>;
  /** Default 1 MiB: reports are small, and the returned message is often cut to its headers. */
  maxMessageBytes?: number;
  /** Sessions open at once; one more is answered 421. */
  maxConnections?: number;
  /** Sessions open at once from one client (an IPv4 address or an IPv6 /64); one more is answered 421 at connect. */
  maxConnectionsPerClient?: number;
  /** A session that hands over no report this long (NOOP, RSET, EHLO do not count) is answered 421 and closed; 0: never. */
  noProgressMs?: number;
  /** Messages one client address may hand over per minute; past it MAIL FROM answers 421 (try later). */
  maxMessagesPerMinute?: number;
  closeTimeoutMs?: number;
  logger?: Logger;
  now?: () => number;
}

export interface BounceListener {
  port: number;
  close(): Promise<void>;
}

export const BOUNCE_MAX_MESSAGE_BYTES = 1024 * 1024;
/** RFC 5321's "insufficient system storage", temporary: the reporting MTA keeps the report and tries again. */
const STORE_FULL_REPLY = '4.3.1 Insufficient system storage: the report store is full; try again later';

export async function startBounceListener(options: BounceListenerOptions): Promise<BounceListener> {
  const {
    host = '127.0.0.1',
    port,
    isReturnPath,
    receive,
    hasRoom = async () => true,
    maxMessageBytes = BOUNCE_MAX_MESSAGE_BYTES,
    maxConnections = 100,
    maxConnectionsPerClient = 10,
    noProgressMs = 60_000,
    maxMessagesPerMinute = 6_000,
    closeTimeoutMs = 10_000,
    logger,
    now = Date.now,
  } = options;
  const rate = createRateWindow(maxMessagesPerMinute, now);
  // One client (an IPv4 address or an IPv6 /64) must not hold every session and lock real MTAs out, nor keep one
  // open without ever sending a report (net/smtp-session-limits.ts).
  const { server, limits } = createGuardedSmtpServer(
    {
      name: 'outbox-bounces',
      banner: 'Outbox bounce listener',
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      size: maxMessageBytes,
      onMailFrom(_address: SMTPServerAddress, session, callback) {
        if (!rate.take(clientKey(session.remoteAddress))) {
          logger?.warn({ session: session.id, remoteAddress: session.remoteAddress }, 'bounce listener: client over its rate');
          return callback(
            smtpError(421, `4.7.0 Too many reports from ${session.remoteAddress}: at most ${maxMessagesPerMinute} a minute, try later`),
          );
        }
        // The reserve is asked before the report is sent, so a full store costs the reporter no upload.
        hasRoom().then(
          (room) => (room ? callback() : callback(smtpError(452, STORE_FULL_REPLY))),
          () => callback(),
        );
      },
      onRcptTo(address: SMTPServerAddress, session, callback) {
        Promise.resolve(isReturnPath(address.address)).then(
          (valid) => {
            if (valid) return callback();
            logger?.warn({ session: session.id, rcptTo: address.address }, 'bounce listener: not a return path of ours');
            return callback(smtpError(550, `5.1.1 <${address.address}>: no such return path here`));
          },
          (error: unknown) => {
            logger?.error({ err: error, session: session.id }, 'bounce listener: return path check failed');
            callback(smtpError(451, '4.3.0 Temporary failure, try again'));
          },
        );
      },
      onData(stream, session, callback) {
        handleData(stream, session).then(
          (reply) => {
            limits.progressed(session.id);
            callback(null, reply);
          },
          (error: Error) => callback(error),
        );
      },
    },
    { maxConnections, maxConnectionsPerClient, noProgressMs, noProgressReason: 'no report handed over', closeTimeoutMs, logger },
  );
  server.on('error', (error) => logger?.warn({ err: error }, 'bounce listener connection error'));

  async function handleData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const raw = await readMessage(stream);
    if (stream.sizeExceeded) throw smtpError(552, `5.3.4 Message too big: the limit is ${maxMessageBytes} bytes`);
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const envelopeTo = session.envelope.rcptTo.map((recipient) => recipient.address);
    try {
      const { reportId } = await receive({ envelopeFrom, envelopeTo, raw });
      logger?.info({ reportId, session: session.id }, reportId === null ? 'bounce report changed nothing' : 'bounce report kept');
      return reportId === null ? 'OK: nothing new in this report, already recorded' : `OK: report ${reportId} kept`;
    } catch (error) {
      if (isStoreFullError(error) || (error instanceof AppError && error.statusCode === 507)) {
        logger?.warn({ session: session.id }, 'bounce report refused: the store is full');
        throw smtpError(452, STORE_FULL_REPLY);
      }
      logger?.error({ err: error, session: session.id }, 'bounce report could not be kept');
      throw smtpError(451, '4.3.0 Temporary failure, try again');
    }
  }

  const boundPort = await listenSmtp(server, port, host);
  logger?.info({ port: boundPort }, 'bounce listener listening');
  return {
    port: boundPort,
    close: () => closeSmtp(server),
  };
}

const RATE_WINDOW_MS = 60_000;
const RATE_ADDRESSES = 10_000;

/** Messages per client address in the current minute; bounded so a scan of many addresses cannot grow it. */
function createRateWindow(limit: number, now: () => number) {
  const counts = new Map<string, { windowStart: number; count: number }>();
  return {
    take(address: string): boolean {
      const at = now();
      const entry = counts.get(address);
      if (!entry || at - entry.windowStart >= RATE_WINDOW_MS) {
        counts.delete(address);
        counts.set(address, { windowStart: at, count: 1 });
        if (counts.size > RATE_ADDRESSES) counts.delete(counts.keys().next().value!);
        return true;
      }
      entry.count += 1;
      return entry.count <= limit;
    },
  };
}
