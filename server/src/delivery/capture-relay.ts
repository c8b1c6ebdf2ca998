/**
 * The embedded capture relay (docs/operations.md#the-capture-relay): with no RELAY_URL, the worker delivers to this real SMTP
 * server on loopback, which keeps each mail under `${dataDir}/captured/` so the whole pipeline runs on a
 * laptop. Recipients at reject.test and defer.test are refused so every status can be produced on purpose.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerAddress, SMTPServerSession } from 'smtp-server';
import { systemClock } from '../clock.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { closeSmtp, listenSmtp, readMessage, smtpError } from '../net/smtp-server.js';

export interface CaptureRelayOptions {
  dataDir: string;
  host?: string;
  port?: number;
  logger?: Logger;
  /** false accepts and discards every mail: a sink for benchmarks that must not measure the disk. */
  store?: boolean;
  clock?: Clock;
  /** How long close() lets open sessions finish before cutting them. */
  closeTimeoutMs?: number;
  /**
   * Advertised as `SIZE` in the EHLO reply and enforced (552 at MAIL FROM for a larger declared `SIZE=`,
   * 552 after DATA for larger content), like a provider's limit. Unlimited by default.
   */
  maxMessageBytes?: number;
}

export interface CaptureRelay {
  port: number;
  /** A nodemailer URL for RELAY_URL-style use, e.g. `smtp://127.0.0.1:2526`. */
  url: string;
  close(): Promise<void>;
}

export interface CapturedEnvelope {
  mailFrom: string;
  rcptTo: string[];
  /** ISO 8601 UTC. */
  receivedAt: string;
  size: number;
  /** The MAIL FROM parameters the client declared (RFC 6152 `BODY`, RFC 1870 `SIZE`), as sent. */
  mailFromParams: Record<string, string>;
  /**
   * The session as this relay saw it, from the greeting (or the previous mail's end) to the reply to this
   * mail's DATA: `C:` lines from the client, `S:` replies; credentials redacted, message content left out.
   */
  dialogue: string[];
}

export interface CapturedMessage {
  /** The file name without extension; also the queue id given in the 250 reply. */
  id: string;
  emlPath: string;
  envelope: CapturedEnvelope;
}

export const REJECT_DOMAIN = 'reject.test';
export const DEFER_DOMAIN = 'defer.test';

export function capturedDir(dataDir: string): string {
  return path.join(dataDir, 'captured');
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

function mailFromParams(session: SMTPServerSession): Record<string, string> {
  const args = session.envelope.mailFrom ? session.envelope.mailFrom.args : false;
  if (!args) return {};
  return Object.fromEntries(Object.entries(args).map(([key, value]) => [key.toUpperCase(), String(value)]));
}

export async function startCaptureRelay(options: CaptureRelayOptions): Promise<CaptureRelay> {
  const {
    dataDir,
    host = '127.0.0.1',
    port = 0,
    logger,
    store = true,
    clock = systemClock,
    closeTimeoutMs = 5_000,
    maxMessageBytes,
  } = options;
  // Each session's dialogue since its last stored mail, kept only when mail is stored.
  const dialogues = new Map<string, string[]>();
  const record = (sessionId: unknown, line: string) => {
    if (!store || typeof sessionId !== 'string') return;
    let lines = dialogues.get(sessionId);
    if (!lines) dialogues.set(sessionId, (lines = []));
    // Bounded: a client looping on RSET must not grow this without end.
    if (lines.length < 500) lines.push(line);
  };
  const transcript =
    (level: 'debug' | 'info') =>
    (data: { tnx?: unknown; cid?: unknown }, message: string, ...args: unknown[]) => {
      if (level === 'debug' && (data.tnx === 'command' || data.tnx === 'send'))
        record(data.cid, `${message} ${args.map(String).join(' ')}`);
    };
  const directory = capturedDir(dataDir);
  // Captured mail is real mail content: readable by the service's user only, like the store.
  if (store) await mkdir(directory, { recursive: true, mode: 0o700 });

  async function save(raw: Buffer, session: SMTPServerSession, dialogue: string[]): Promise<string> {
    const receivedMs = clock.now();
    const id = `${receivedMs}-${randomBytes(6).toString('hex')}`;
    const envelope: CapturedEnvelope = {
      mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
      rcptTo: session.envelope.rcptTo.map((recipient) => recipient.address),
      receivedAt: new Date(receivedMs).toISOString(),
      size: raw.length,
      mailFromParams: mailFromParams(session),
      // The 250 is written after this returns, with the text the onData callback gives below.
      dialogue: [...dialogue, `S: 250 OK: queued as ${id}`],
    };
    await writeFile(path.join(directory, `${id}.eml`), raw, { mode: 0o600 });
    // The .json is written last and renamed into place, so a listed message always has its bytes.
    const jsonPath = path.join(directory, `${id}.json`);
    await writeFile(`${jsonPath}.tmp`, JSON.stringify(envelope, null, 2), { mode: 0o600 });
    await rename(`${jsonPath}.tmp`, jsonPath);
    return id;
  }

  const server = new SMTPServer({
    name: 'outbox-capture-relay',
    banner: 'Outbox capture relay: mail is kept locally, never delivered',
    // Loopback only and never a real delivery, so there is nothing for TLS or a password to protect.
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    disableReverseLookup: true,
    closeTimeout: closeTimeoutMs,
    ...(maxMessageBytes !== undefined ? { size: maxMessageBytes } : {}),
    // smtp-server's logger is the only place that sees each command and reply; it feeds the dialogue.
    logger: {
      trace: () => undefined,
      debug: transcript('debug'),
      info: () => undefined,
      warn: () => undefined,
      error: () => undefined,
      fatal: () => undefined,
    },
    onAuth(_auth, _session, callback) {
      // Any RELAY_URL credentials the operator pointed at us are fine: this relay stands in for a provider.
      callback(null, { user: 'capture' });
    },
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      const domain = domainOf(address.address);
      if (domain === REJECT_DOMAIN) {
        return callback(smtpError(550, `5.1.1 Recipient rejected by the capture relay (${REJECT_DOMAIN})`));
      }
      if (domain === DEFER_DOMAIN) {
        return callback(smtpError(451, `4.3.0 Try again later (${DEFER_DOMAIN})`));
      }
      return callback();
    },
    onClose(session) {
      dialogues.delete(session.id);
    },
    onData(stream, session, callback) {
      if (!store) {
        stream.resume();
        stream.once('end', () => callback(null, 'OK: discarded'));
        return;
      }
      readMessage(stream)
        .then((raw) => {
          if (stream.sizeExceeded) throw smtpError(552, `5.3.4 Message too big: the limit is ${maxMessageBytes} bytes`);
          const dialogue = [...(dialogues.get(session.id) ?? []), 'C: <message content>'];
          dialogues.delete(session.id);
          return save(raw, session, dialogue);
        })
        .then(
          (id) => {
            logger?.info({ queueId: id, rcptTo: session.envelope.rcptTo.length }, 'capture relay stored a message');
            callback(null, `OK: queued as ${id}`);
          },
          (error: unknown) => {
            if ((error as { responseCode?: unknown }).responseCode === 552) return callback(error as Error);
            logger?.error({ err: error }, 'capture relay could not store a message');
            callback(smtpError(451, '4.3.0 The capture relay could not store the message, try again'));
          },
        );
    },
  });
  server.on('error', (error) => logger?.warn({ err: error }, 'capture relay connection error'));

  const boundPort = await listenSmtp(server, port, host);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  logger?.info({ port: boundPort, store }, 'capture relay listening');

  return {
    port: boundPort,
    url: `smtp://${urlHost}:${boundPort}`,
    close: () => closeSmtp(server),
  };
}

/** Every stored message, oldest first. Files of a message still being written are skipped. */
export async function listCapturedMessages(dataDir: string): Promise<CapturedMessage[]> {
  const directory = capturedDir(dataDir);
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const ids = names
    .filter((name) => name.endsWith('.json'))
    .map((name) => name.slice(0, -'.json'.length))
    // Names start with the receipt time in ms, so comparing the numeric part orders them by arrival.
    .sort((a, b) => Number(a.split('-')[0]) - Number(b.split('-')[0]) || a.localeCompare(b));
  return Promise.all(
    ids.map(async (id) => ({
      id,
      emlPath: path.join(directory, `${id}.eml`),
      envelope: JSON.parse(await readFile(path.join(directory, `${id}.json`), 'utf8')) as CapturedEnvelope,
    })),
  );
}
