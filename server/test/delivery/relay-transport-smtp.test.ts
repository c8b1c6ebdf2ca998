/**
 * The relay transport speaks SMTP like a well-behaved MTA: BODY=8BITMIME and SIZE= on MAIL FROM,
 * a too-large mail refused before DATA, RSET after a refused mail on a connection that is kept, QUIT when
 * idle and at close, the EHLO name, the null sender, and the RELAY_TLS policies against a self-signed
 * STARTTLS relay. Every peer is a real SMTP server on loopback that records the dialogue it saw.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SMTPServerOptions } from 'smtp-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listCapturedMessages, startCaptureRelay } from '../../src/delivery/capture-relay.js';
import type { CaptureRelay } from '../../src/delivery/capture-relay.js';
import { createRelayTransport } from '../../src/delivery/relay-transport.js';
import { findEhloName } from '../../src/submission/mail-hostname.js';
import type { RelayTransport, RelayTransportOptions } from '../../src/delivery/relay-transport.js';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'intake', 'fixtures');
const certificate = {
  key: fs.readFileSync(path.join(fixtures, 'localhost-key.pem')),
  cert: fs.readFileSync(path.join(fixtures, 'localhost-cert.pem')),
};

let dataDir: string;
let relay: CaptureRelay | undefined;
const transports: RelayTransport[] = [];
const servers: SmtpPeer[] = [];

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-relay-smtp-'));
});

afterEach(async () => {
  await Promise.all(transports.splice(0).map((transport) => transport.close()));
  await relay?.close();
  relay = undefined;
  await Promise.all(servers.splice(0).map((server) => server.close()));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function transportTo(url: string, options: RelayTransportOptions = {}): RelayTransport {
  const transport = createRelayTransport(url, { connectionTimeoutMs: 2_000, socketTimeoutMs: 5_000, ...options });
  transports.push(transport);
  return transport;
}

interface Peer {
  url: string;
  /** Every line of every session: `C:` from the client, `S:` replies, prefixed by the session number. */
  lines: string[];
  sessions: number;
  secure: boolean[];
  ehloNames: string[];
}

/** A real SMTP server that keeps the dialogue of every session and accepts every mail. */
async function startPeer(options: SMTPServerOptions = {}): Promise<Peer> {
  const peer: Peer = { url: '', lines: [], sessions: 0, secure: [], ehloNames: [] };
  const sessionNumbers = new Map<string, number>();
  const log = (data: { tnx?: unknown; cid?: unknown }, message: string, ...args: unknown[]) => {
    if (data.tnx !== 'command' && data.tnx !== 'send') return;
    peer.lines.push(`${sessionNumbers.get(String(data.cid)) ?? '?'} ${message} ${args.map(String).join(' ')}`);
  };
  const server = await startSmtpPeer({
    disabledCommands: ['STARTTLS'],
    logger: {
      trace: () => undefined,
      debug: log,
      info: () => undefined,
      warn: () => undefined,
      error: () => undefined,
      fatal: () => undefined,
    },
    onConnect(session, callback) {
      peer.sessions += 1;
      sessionNumbers.set(session.id, peer.sessions);
      callback();
    },
    onMailFrom(_address, session, callback) {
      peer.secure.push(session.secure);
      peer.ehloNames.push(session.hostNameAppearsAs);
      callback();
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.once('end', () => callback(null, 'OK'));
    },
    ...options,
  });
  servers.push(server);
  peer.url = server.url;
  return peer;
}

async function until(condition: () => boolean, what: string, deadlineMs = 5_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const commands = (peer: Peer) => peer.lines.filter((line) => / C: /.test(line)).map((line) => line.replace(/ C: /, ' '));

const ascii = Buffer.from('From: app@example.com\r\nTo: a@example.com\r\nSubject: Hi\r\n\r\nHello\r\n');
const eightBit = Buffer.from(
  'From: app@example.com\r\nTo: a@example.com\r\nSubject: Grüße\r\nMIME-Version: 1.0\r\n' +
    'Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln ✓\r\n',
);

describe('MAIL FROM parameters', () => {
  it('declares BODY=8BITMIME for 8-bit content only, and SIZE= with the exact size', async () => {
    relay = await startCaptureRelay({ dataDir, maxMessageBytes: 100_000 });
    const transport = transportTo(relay.url);
    expect((await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: eightBit })).kind).toBe('sent');
    expect((await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii })).kind).toBe('sent');
    const [first, second] = await listCapturedMessages(dataDir);
    expect(first!.envelope.mailFromParams).toEqual({ BODY: '8BITMIME', SIZE: String(eightBit.length) });
    expect(second!.envelope.mailFromParams).toEqual({ SIZE: String(ascii.length) });
    expect(fs.readFileSync(first!.emlPath).equals(eightBit)).toBe(true);
    // The dialogue of one delivered mail, as the relay saw it.
    expect(first!.envelope.dialogue).toEqual([
      expect.stringMatching(/^S: 220 /),
      expect.stringMatching(/^C: EHLO /),
      expect.stringMatching(/^S: 250-/),
      `C: MAIL FROM:<app@example.com> BODY=8BITMIME SIZE=${eightBit.length}`,
      'S: 250 Accepted',
      'C: RCPT TO:<a@example.com>',
      'S: 250 Accepted',
      'C: DATA',
      'S: 354 End data with <CR><LF>.<CR><LF>',
      'C: <message content>',
      `S: 250 OK: queued as ${first!.id}`,
    ]);
    if (process.env.OUTBOX_PRINT_DIALOGUE) console.log(first!.envelope.dialogue.join('\n'));
  });

  it('refuses a mail larger than the relay advertises before MAIL FROM, records 552, and keeps the connection', async () => {
    relay = await startCaptureRelay({ dataDir, maxMessageBytes: 1_000 });
    const transport = transportTo(relay.url);
    const big = Buffer.concat([ascii, Buffer.from(`${'x'.repeat(76)}\r\n`.repeat(20))]);
    const outcome = await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: big });
    expect(outcome).toMatchObject({ kind: 'rejected', code: 552 });
    expect(outcome.kind === 'rejected' && outcome.reply).toBe(
      `552 5.3.4 Not sent: the message is ${big.length} bytes and the relay accepts at most 1000 (SIZE in its EHLO reply)`,
    );
    expect((await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii })).kind).toBe('sent');
    const [only] = await listCapturedMessages(dataDir);
    // One session carried both: the refused mail never reached MAIL FROM and cost no new connection.
    expect(only!.envelope.dialogue.filter((line) => line.startsWith('C: EHLO'))).toHaveLength(1);
    expect(only!.envelope.dialogue.filter((line) => line.startsWith('C: MAIL FROM'))).toHaveLength(1);
  });

  it('records the relay’s own 552 when it refuses the declared SIZE at MAIL FROM', async () => {
    const peer = await startPeer({
      hideSize: true,
      size: 500,
      onMailFrom(address, _session, callback) {
        const declared = address.args ? Number(address.args.SIZE ?? 0) : 0;
        if (declared > 500) return callback(Object.assign(new Error('5.3.4 Message size exceeds fixed limit'), { responseCode: 552 }));
        callback();
      },
    });
    const big = Buffer.concat([ascii, Buffer.alloc(600, 'y')]);
    const outcome = await transportTo(peer.url).send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: big });
    expect(outcome).toMatchObject({ kind: 'rejected', code: 552, reply: '552 5.3.4 Message size exceeds fixed limit' });
    expect(commands(peer).some((line) => line.includes(`MAIL FROM:<app@example.com> SIZE=${big.length}`))).toBe(true);
    expect(commands(peer).some((line) => line.endsWith('DATA'))).toBe(false);
  });
});

describe('connection manners', () => {
  it('resets and keeps the connection after a mail whose recipients were all refused', async () => {
    const peer = await startPeer({
      onRcptTo(address, _session, callback) {
        if (address.address.endsWith('@reject.test'))
          return callback(Object.assign(new Error('5.1.1 No such user'), { responseCode: 550 }));
        callback();
      },
    });
    const transport = transportTo(peer.url, { maxConnections: 1 });
    const refused = await transport.send({ envelope: { from: 'app@example.com', to: ['x@reject.test'] }, raw: ascii });
    expect(refused).toMatchObject({ kind: 'rejected', code: 550 });
    expect((await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii })).kind).toBe('sent');
    expect(peer.sessions).toBe(1);
    expect(commands(peer).map((line) => line.replace(/^1 /, '').split(/[ :]/)[0])).toEqual([
      'EHLO',
      'MAIL',
      'RCPT',
      'RSET',
      'MAIL',
      'RCPT',
      'DATA',
    ]);
  });

  it('says QUIT to close an idle connection, and opens a new one for the next mail', async () => {
    const peer = await startPeer();
    const transport = transportTo(peer.url, { idleTimeoutMs: 150 });
    expect((await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii })).kind).toBe('sent');
    await until(() => commands(peer).includes('1 QUIT'), 'QUIT on the idle connection');
    expect(peer.lines).toContain('1 S: 221 Bye');
    expect((await transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii })).kind).toBe('sent');
    expect(peer.sessions).toBe(2);
  });

  it('says QUIT on every open connection at close, after the sends in flight', async () => {
    const peer = await startPeer();
    const transport = createRelayTransport(peer.url, { maxConnections: 3 });
    const outcomes = await Promise.all(
      [1, 2, 3].map(() => transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii })),
    );
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['sent', 'sent', 'sent']);
    await transport.close();
    await until(() => commands(peer).filter((line) => line.endsWith(' QUIT')).length === peer.sessions, 'QUIT from every session');
    expect(peer.sessions).toBeGreaterThanOrEqual(1);
  });

  it('greets with MAIL_HOSTNAME, and without it with the FQDN or its own address literal, never a made-up one', async () => {
    const peer = await startPeer();
    await transportTo(peer.url, { name: 'mail.example.com' }).send({
      envelope: { from: 'app@example.com', to: ['a@example.com'] },
      raw: ascii,
    });
    await transportTo(peer.url).send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii });
    // Over loopback the connection's own address is 127.0.0.1: the literal is true, not a fallback.
    expect(peer.ehloNames).toEqual(['mail.example.com', findEhloName() ?? '[127.0.0.1]']);
  });

  it('relays the null sender as MAIL FROM:<>', async () => {
    relay = await startCaptureRelay({ dataDir });
    const outcome = await transportTo(relay.url).send({ envelope: { from: '', to: ['a@example.com'] }, raw: ascii });
    expect(outcome.kind).toBe('sent');
    const [captured] = await listCapturedMessages(dataDir);
    expect(captured!.envelope.mailFrom).toBe('');
    // No SIZE in this relay's EHLO (no limit set), so none declared.
    expect(captured!.envelope.dialogue).toContain('C: MAIL FROM:<>');
  });
});

describe('RELAY_TLS against a self-signed STARTTLS relay', () => {
  const startTlsPeer = () => startPeer({ ...certificate, disabledCommands: [] });
  const send = (transport: RelayTransport) => transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii });

  it('opportunistic (the default) checks the certificate and names the cause and the fix in the reply', async () => {
    const peer = await startTlsPeer();
    const outcome = await send(transportTo(peer.url));
    expect(outcome.kind).toBe('unreachable');
    const reply = outcome.kind === 'unreachable' ? outcome.reply : '';
    expect(reply).toMatch(/^TLS with the relay failed: .*self[- ]signed certificate/);
    expect(reply).toContain('RELAY_TLS=opportunistic');
    expect(reply).toContain('RELAY_TLS_CA');
    expect(reply).toContain('RELAY_TLS_INSECURE=on');
  });

  it('delivers over verified TLS when RELAY_TLS_CA trusts the certificate', async () => {
    const peer = await startTlsPeer();
    expect((await send(transportTo(peer.url, { tls: { mode: 'require', ca: certificate.cert } }))).kind).toBe('sent');
    expect(peer.secure).toEqual([true]);
  });

  it('delivers over unverified TLS with the insecure switch', async () => {
    const peer = await startTlsPeer();
    expect((await send(transportTo(peer.url, { tls: { mode: 'opportunistic', insecure: true } }))).kind).toBe('sent');
    expect(peer.secure).toEqual([true]);
  });

  it('off never starts TLS, even when the relay offers it', async () => {
    const peer = await startTlsPeer();
    expect((await send(transportTo(peer.url, { tls: { mode: 'off' } }))).kind).toBe('sent');
    expect(peer.secure).toEqual([false]);
    expect(commands(peer).some((line) => line.includes('STARTTLS'))).toBe(false);
  });

  it('require refuses a relay that does not offer STARTTLS, and says so', async () => {
    const peer = await startPeer();
    const outcome = await send(transportTo(peer.url, { tls: { mode: 'require' } }));
    expect(outcome.kind).toBe('unreachable');
    expect(outcome.kind === 'unreachable' && outcome.reply).toMatch(
      /^The relay refused STARTTLS \(it answered "5\d\d .*"\); RELAY_TLS=require needs it/,
    );
    expect(commands(peer).some((line) => line.startsWith('1 MAIL'))).toBe(false);
  });
});

describe('the relay login is never sent unencrypted unless RELAY_TLS=off (issue 24 item 1)', () => {
  /** A relay that offers no STARTTLS (as when it is stripped on the path), requires AUTH, and would take it in clear. */
  async function startLoginPeer(): Promise<Peer & { logins: string[] }> {
    const logins: string[] = [];
    const peer = await startPeer({
      authOptional: false,
      allowInsecureAuth: true,
      authMethods: ['PLAIN', 'LOGIN'],
      onAuth(auth, _session, callback) {
        logins.push(`${auth.method} ${auth.username ?? ''}`);
        callback(null, { user: auth.username });
      },
    });
    return Object.assign(peer, { logins, url: peer.url.replace('smtp://', 'smtp://relayuser:s3cret@') });
  }
  const send = (transport: RelayTransport) => transport.send({ envelope: { from: 'app@example.com', to: ['a@example.com'] }, raw: ascii });
  const authCommands = (peer: Peer) => commands(peer).filter((line) => /^\d+ AUTH/i.test(line));

  for (const tls of [undefined, { mode: 'opportunistic' as const }]) {
    it(`${tls ? 'opportunistic' : 'the transport default'} fails the attempt as transient, sends no AUTH and no mail`, async () => {
      const peer = await startLoginPeer();
      const transport = transportTo(peer.url, tls ? { tls } : {});
      const outcome = await send(transport);
      expect(outcome.kind).toBe('unreachable');
      expect(outcome.kind === 'unreachable' && outcome.reply).toMatch(
        /^Not logged in to the relay: it offered no STARTTLS, and RELAY_URL's credentials are never sent unencrypted/,
      );
      expect(await transport.verify()).toBe(false);
      expect(peer.sessions).toBe(2);
      expect(authCommands(peer)).toEqual([]);
      expect(peer.logins).toEqual([]);
      expect(commands(peer).some((line) => /^\d+ (MAIL|DATA)/.test(line))).toBe(false);
    });
  }

  it('RELAY_TLS=off, chosen explicitly, logs in and delivers in clear', async () => {
    const peer = await startLoginPeer();
    expect((await send(transportTo(peer.url, { tls: { mode: 'off' } }))).kind).toBe('sent');
    expect(peer.logins).toEqual(['PLAIN relayuser']);
    expect(peer.secure).toEqual([false]);
  });

  it('a relay that offers STARTTLS gets the login only inside TLS', async () => {
    const peer = await startLoginPeer();
    const tlsPeer = await startPeer({
      ...certificate,
      disabledCommands: [],
      authOptional: false,
      onAuth(auth, session, callback) {
        peer.logins.push(`${auth.method} ${auth.username ?? ''} secure=${String(session.secure)}`);
        callback(null, { user: auth.username });
      },
    });
    const url = tlsPeer.url.replace('smtp://', 'smtp://relayuser:s3cret@');
    expect((await send(transportTo(url, { tls: { mode: 'opportunistic', ca: certificate.cert } }))).kind).toBe('sent');
    expect(peer.logins).toEqual(['PLAIN relayuser secure=true']);
  });
});
