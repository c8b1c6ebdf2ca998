/**
 * The embedded capture relay (PRODUCT.md §3): with no RELAY_URL, the worker delivers to this real SMTP
 * server on loopback, which keeps each mail under `${dataDir}/captured/` so the whole pipeline runs on a
 * laptop. Recipients at reject.test and defer.test are refused so every status can be produced on purpose.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { systemClock } from '../clock.js';
import type { Clock } from '../clock.js';

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

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

function smtpError(responseCode: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode });
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

function readStream(stream: SMTPServerDataStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

export async function startCaptureRelay(options: CaptureRelayOptions): Promise<CaptureRelay> {
  const { dataDir, host = '127.0.0.1', port = 0, logger, store = true, clock = systemClock, closeTimeoutMs = 5_000 } = options;
  const directory = capturedDir(dataDir);
  if (store) await mkdir(directory, { recursive: true });

  async function save(raw: Buffer, session: SMTPServerSession): Promise<string> {
    const receivedMs = clock.now();
    const id = `${receivedMs}-${randomBytes(6).toString('hex')}`;
    const envelope: CapturedEnvelope = {
      mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
      rcptTo: session.envelope.rcptTo.map((recipient) => recipient.address),
      receivedAt: new Date(receivedMs).toISOString(),
      size: raw.length,
    };
    await writeFile(path.join(directory, `${id}.eml`), raw);
    // The .json is written last and renamed into place, so a listed message always has its bytes.
    const jsonPath = path.join(directory, `${id}.json`);
    await writeFile(`${jsonPath}.tmp`, JSON.stringify(envelope, null, 2));
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
    logger: false,
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
    onData(stream, session, callback) {
      if (!store) {
        stream.resume();
        stream.once('end', () => callback(null, 'OK: discarded'));
        return;
      }
      readStream(stream)
        .then((raw) => save(raw, session))
        .then(
          (id) => {
            logger?.info({ queueId: id, rcptTo: session.envelope.rcptTo.length }, 'capture relay stored a message');
            callback(null, `OK: queued as ${id}`);
          },
          (error: unknown) => {
            logger?.error({ err: error }, 'capture relay could not store a message');
            callback(smtpError(451, '4.3.0 The capture relay could not store the message, try again'));
          },
        );
    },
  });
  server.on('error', (error) => logger?.warn({ err: error }, 'capture relay connection error'));

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const address = server.server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  logger?.info({ port: boundPort, store }, 'capture relay listening');

  return {
    port: boundPort,
    url: `smtp://${urlHost}:${boundPort}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
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
