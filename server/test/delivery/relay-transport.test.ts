import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { SMTPServerOptions } from 'smtp-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listCapturedMessages, startCaptureRelay } from '../../src/delivery/capture-relay.js';
import type { CaptureRelay } from '../../src/delivery/capture-relay.js';
import { classifyDeliveryError, createRelayTransport } from '../../src/delivery/relay-transport.js';
import type { RelayTransport } from '../../src/delivery/relay-transport.js';
import { buildMessage } from '../../src/submission/message-builder.js';
import { closedPort, waitUntil } from '../support/net.js';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.js';

let dataDir: string;
let relay: CaptureRelay | undefined;
let transport: RelayTransport | undefined;
const servers: SmtpPeer[] = [];

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-relay-'));
});

afterEach(async () => {
  await transport?.close();
  transport = undefined;
  await relay?.close();
  relay = undefined;
  await Promise.all(servers.splice(0).map((server) => server.close()));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A real SMTP server whose DATA answer the test decides, for replies the capture relay never gives. */
async function startPeer(
  onData: NonNullable<SMTPServerOptions['onData']>,
  options: SMTPServerOptions = { disabledCommands: ['STARTTLS'] },
): Promise<number> {
  // A client that drops the TLS handshake (the untrusted-certificate test) is an error smtp-peer.ts ignores.
  const peer = await startSmtpPeer({ ...options, onData });
  servers.push(peer);
  return peer.port;
}

function smtpError(responseCode: number, message: string) {
  return Object.assign(new Error(message), { responseCode });
}

/** The STARTTLS test certificate of the intake tests; self-signed, for loopback only. */
const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'intake', 'fixtures');

const raw = 'From: app@example.com\r\nTo: a@example.com\r\nSubject: Hi\r\n\r\nHello\r\n';

describe('createRelayTransport against real SMTP servers', () => {
  it('reports sent with the reply and accepted recipients', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url);
    const outcome = await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw });
    expect(outcome).toMatchObject({ kind: 'sent', accepted: ['a@example.com'], rejected: [] });
    expect(outcome.kind === 'sent' && outcome.reply).toMatch(/^250 OK: queued as /);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('counts a partial recipient rejection as sent and lists the rejected ones', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url);
    const outcome = await transport.send({
      envelope: { from: 'app@example.com', to: ['a@example.com', 'b@reject.test', 'c@defer.test'] },
      raw,
    });
    expect(outcome).toMatchObject({ kind: 'sent', accepted: ['a@example.com'], rejected: ['b@reject.test', 'c@defer.test'] });
  });

  it('reports rejected for a 5xx and deferred for a 4xx at RCPT TO', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url);
    const rejected = await transport.send({ envelope: { from: 'app@example.com', to: ['x@reject.test'] }, raw });
    expect(rejected).toMatchObject({
      kind: 'rejected',
      code: 550,
      reply: '550 5.1.1 Recipient rejected by the capture relay (reject.test)',
    });
    const deferred = await transport.send({ envelope: { from: 'app@example.com', to: ['x@defer.test'] }, raw });
    expect(deferred).toMatchObject({ kind: 'deferred', code: 451, reply: '451 4.3.0 Try again later (defer.test)' });
  });

  it('defers when all recipients are refused but one of them only for now', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url);
    const outcome = await transport.send({
      envelope: { from: 'app@example.com', to: ['x@defer.test', 'y@reject.test'] },
      raw,
    });
    expect(outcome).toMatchObject({ kind: 'deferred', code: 451 });
  });

  it('classifies the reply after DATA: 554 rejected, 452 deferred', async () => {
    const rejectingPort = await startPeer((stream, _session, callback) => {
      stream.resume();
      stream.on('end', () => callback(smtpError(554, '5.7.1 Message refused by policy')));
    });
    const deferringPort = await startPeer((stream, _session, callback) => {
      stream.resume();
      stream.on('end', () => callback(smtpError(452, '4.3.1 Mailbox storage full')));
    });
    const envelope = { from: 'app@example.com', to: ['a@example.com'] };
    const rejecting = createRelayTransport(`smtp://127.0.0.1:${rejectingPort}`, { pool: false });
    const deferring = createRelayTransport(`smtp://127.0.0.1:${deferringPort}`);
    try {
      expect(await rejecting.send({ envelope, raw })).toMatchObject({
        kind: 'rejected',
        code: 554,
        reply: '554 5.7.1 Message refused by policy',
      });
      expect(await deferring.send({ envelope, raw })).toMatchObject({
        kind: 'deferred',
        code: 452,
        reply: '452 4.3.1 Mailbox storage full',
      });
    } finally {
      rejecting.close();
      deferring.close();
    }
  });

  it('reports unreachable when nothing listens, and verify() is false', async () => {
    const port = await closedPort();
    transport = createRelayTransport(`smtp://127.0.0.1:${port}`, { connectionTimeoutMs: 2000 });
    const outcome = await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw });
    expect(outcome.kind).toBe('unreachable');
    expect(outcome.reply).toMatch(/ECONNREFUSED/);
    expect(await transport.verify()).toBe(false);
  });

  it('reports unreachable when the relay accepts the connection but never greets', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const address = silent.address();
    if (typeof address !== 'object' || address === null) throw new Error('no address');
    transport = createRelayTransport(`smtp://127.0.0.1:${address.port}`, { connectionTimeoutMs: 300 });
    try {
      const outcome = await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw });
      expect(outcome.kind).toBe('unreachable');
      expect(outcome.durationMs).toBeGreaterThanOrEqual(250);
    } finally {
      transport.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('close() ends as soon as a connection that was still opening is gone, not at its bound', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const address = silent.address();
    if (typeof address !== 'object' || address === null) throw new Error('no address');
    // The bound of close() is the socket timeout plus the QUIT wait: 32 s here.
    transport = createRelayTransport(`smtp://127.0.0.1:${address.port}`, { connectionTimeoutMs: 30_000, socketTimeoutMs: 30_000 });
    const sending = transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw });
    await waitUntil(() => sockets.length === 1, { what: 'the connection at the silent relay' });
    // The relay goes away while the greeting is awaited (as a worker's stop finds a hanging relay), and the
    // transport is closed before it has noticed.
    for (const socket of sockets) socket.destroy();
    const started = Date.now();
    await transport.close();
    expect(Date.now() - started, 'close() waited for a connection that was already gone').toBeLessThan(10_000);
    expect((await sending).kind).toBe('unreachable');
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('speaks TLS: implicit (smtps://) and STARTTLS, with the bytes intact', async () => {
    const tls = {
      key: fs.readFileSync(path.join(fixtures, 'localhost-key.pem')),
      cert: fs.readFileSync(path.join(fixtures, 'localhost-cert.pem')),
    };
    const received: { secure: boolean; raw: Buffer }[] = [];
    const keep: NonNullable<SMTPServerOptions['onData']> = (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({ secure: session.secure, raw: Buffer.concat(chunks) });
        callback(null, 'OK');
      });
    };
    const implicitPort = await startPeer(keep, { ...tls, secure: true });
    const startTlsPort = await startPeer(keep, { ...tls });
    const envelope = { from: 'app@example.com', to: ['a@example.com'] };
    // The certificate is self-signed for 127.0.0.1, so trusting it as the CA verifies it fully.
    const implicit = createRelayTransport(`smtps://127.0.0.1:${implicitPort}`, { tls: { mode: 'opportunistic', ca: tls.cert } });
    const upgraded = createRelayTransport(`smtp://127.0.0.1:${startTlsPort}`, { tls: { mode: 'require', ca: tls.cert } });
    try {
      expect((await implicit.send({ envelope, raw })).kind).toBe('sent');
      expect((await upgraded.send({ envelope, raw })).kind).toBe('sent');
    } finally {
      await Promise.all([implicit.close(), upgraded.close()]);
    }
    expect(received.map((message) => message.secure)).toEqual([true, true]);
    expect(received.every((message) => message.raw.equals(Buffer.from(raw)))).toBe(true);
  });

  it('reports unreachable when the relay certificate is not trusted', async () => {
    const port = await startPeer(
      (stream, _session, callback) => {
        stream.resume();
        stream.on('end', () => callback(null, 'OK'));
      },
      {
        key: fs.readFileSync(path.join(fixtures, 'localhost-key.pem')),
        cert: fs.readFileSync(path.join(fixtures, 'localhost-cert.pem')),
        secure: true,
      },
    );
    transport = createRelayTransport(`smtps://127.0.0.1:${port}`);
    const outcome = await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw });
    expect(outcome.kind).toBe('unreachable');
  });

  it('reports invalid for a message without recipients', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url);
    const outcome = await transport.send({ envelope: { from: 'app@example.com', to: [] }, raw });
    expect(outcome).toMatchObject({ kind: 'invalid', reply: 'The message has no recipients' });
  });

  it('verify() is true against a live relay', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url);
    expect(await transport.verify()).toBe(true);
  });

  it('delivers a composed message with an attachment byte for byte, envelope intact', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url, { maxConnections: 2 });
    const built = await new MailComposer({
      from: { name: 'Ünïcode Sender', address: 'app@example.com' },
      to: 'visible@example.com',
      bcc: 'hidden@example.org',
      subject: 'Report with attachment',
      text: 'See the attachment.\r\n.\r\n..two dots\r\nThe dot lines above must survive dot-stuffing.',
      html: '<p>See the <b>attachment</b>.</p>',
      attachments: [{ filename: 'data.bin', content: randomBytes(50_000) }],
      messageId: '<attachment-test@outbox.local>',
    })
      .compile()
      .build();
    // SMTP framing ends the data with CRLF; buildMessage stores that CRLF, so the test does the same.
    const composed = Buffer.concat([built, Buffer.from('\r\n')]);
    const envelope = { from: 'bounce@example.com', to: ['visible@example.com', 'hidden@example.org'] };

    const outcome = await transport.send({ envelope, raw: composed });
    expect(outcome.kind).toBe('sent');

    const [captured] = await listCapturedMessages(dataDir);
    expect(captured?.envelope).toMatchObject({ mailFrom: envelope.from, rcptTo: envelope.to, size: composed.length });
    const stored = fs.readFileSync(captured?.emlPath ?? '');
    expect(stored.equals(composed)).toBe(true);
  });

  it('delivers a message built by buildMessage byte for byte', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url);
    const message = await buildMessage({
      fromMail: 'app@example.com',
      to: [{ recipientMail: 'a@example.com' }],
      bcc: [{ recipientMail: 'b@example.org' }],
      subject: 'Built',
      // Bare LFs and no final newline: the builder must store what SMTP will deliver.
      text: 'Line one\nLine two\n.\nNo trailing newline here',
    });
    expect((await transport.send({ envelope: message.envelope, raw: message.raw })).kind).toBe('sent');
    const [captured] = await listCapturedMessages(dataDir);
    expect(fs.readFileSync(captured?.emlPath ?? '').equals(message.raw)).toBe(true);
    expect(captured?.envelope.rcptTo).toEqual(['a@example.com', 'b@example.org']);
  });

  it('sends many messages over a small pool', async () => {
    relay = await startCaptureRelay({ dataDir });
    transport = createRelayTransport(relay.url, { maxConnections: 2 });
    const sender = transport;
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        sender.send({ envelope: { from: 'app@example.com', to: [`user${index}@example.com`] }, raw }),
      ),
    );
    expect(outcomes.every((outcome) => outcome.kind === 'sent')).toBe(true);
    expect(await listCapturedMessages(dataDir)).toHaveLength(10);
  });
});

describe('classifyDeliveryError', () => {
  const failure = (fields: Record<string, unknown>) => Object.assign(new Error('boom'), fields);

  it('maps connection-level codes to unreachable even with a reply code', () => {
    for (const code of ['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ETLS', 'EAUTH']) {
      expect(classifyDeliveryError(failure({ code, responseCode: 535 }), 1).kind).toBe('unreachable');
    }
  });

  it('maps reply codes to rejected and deferred', () => {
    expect(classifyDeliveryError(failure({ code: 'EMESSAGE', responseCode: 550, response: '550 no' }), 1)).toEqual({
      kind: 'rejected',
      code: 550,
      reply: '550 no',
      durationMs: 1,
    });
    expect(classifyDeliveryError(failure({ code: 'EENVELOPE', responseCode: 421 }), 1)).toMatchObject({
      kind: 'deferred',
      code: 421,
      reply: 'boom',
    });
  });

  it('maps envelope and message faults without a reply to invalid, anything unknown to unreachable', () => {
    expect(classifyDeliveryError(failure({ code: 'EENVELOPE' }), 1).kind).toBe('invalid');
    expect(classifyDeliveryError(failure({ code: 'EMESSAGE' }), 1).kind).toBe('invalid');
    expect(classifyDeliveryError(new Error('something odd'), 1).kind).toBe('unreachable');
    expect(classifyDeliveryError('not even an error', 1)).toMatchObject({ kind: 'unreachable', reply: 'not even an error' });
  });
});
