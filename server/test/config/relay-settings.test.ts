/**
 * RELAY_TLS, RELAY_TLS_CA, RELAY_TLS_INSECURE and MAIL_HOSTNAME: validated at
 * start with every problem listed, risky choices warned about, and the TLS policy seen end to end by a
 * mail delivered to a self-signed STARTTLS relay on loopback.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MailStatus } from '@outbox/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { configWarnings, loadConfig } from '../../src/config.js';
import { configProblems } from '../support/config-problems.js';
import type { RunningOutbox } from '../../src/main.js';
import { isPublicDomain } from '../../src/submission/mail-hostname.js';
import { makeTempDir } from '../support/context.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'intake', 'fixtures');
const certFile = path.join(fixtures, 'localhost-cert.pem');
const keyFile = path.join(fixtures, 'localhost-key.pem');

const problemsOf = (env: Record<string, string>): string[] => configProblems({ DATA_DIR: makeTempDir('outbox-config-'), ...env });

describe('relay TLS and MAIL_HOSTNAME settings', () => {
  it('defaults to opportunistic TLS with certificate checks', () => {
    const config = loadConfig({ DATA_DIR: makeTempDir('outbox-config-') });
    expect(config).toMatchObject({
      relayTls: 'opportunistic',
      relayTlsCaFile: undefined,
      relayTlsInsecure: false,
      mailHostname: undefined,
    });
  });

  it('defaults RELAY_TLS to require for a relay with credentials or off the machine, opportunistic only on loopback without (issue 24 item 1)', () => {
    const relayTlsOf = (env: Record<string, string>) => loadConfig({ DATA_DIR: makeTempDir('outbox-config-'), ...env }).relayTls;
    expect(relayTlsOf({})).toBe('opportunistic');
    for (const url of ['smtp://127.0.0.1:2525', 'smtp://localhost:25', 'smtp://[::1]:25', 'smtp://127.0.0.2']) {
      expect([url, relayTlsOf({ RELAY_URL: url })]).toEqual([url, 'opportunistic']);
    }
    for (const url of [
      'smtp://relay.example.com:587',
      'smtp://10.0.0.5:25',
      'smtp://[2001:db8::1]:25',
      'smtp://user:pass@127.0.0.1:2525',
      'smtp://user@localhost:25',
      'smtps://user:pass@smtp.example.com',
    ]) {
      expect([url, relayTlsOf({ RELAY_URL: url })]).toEqual([url, 'require']);
    }
    expect(relayTlsOf({ RELAY_URL: 'smtp://user:pass@relay.example.com', RELAY_TLS: 'opportunistic' })).toBe('opportunistic');
    expect(relayTlsOf({ RELAY_URL: 'smtp://user:pass@relay.example.com', RELAY_TLS: 'off' })).toBe('off');
  });

  it('lists every bad relay TLS or host name setting at once', () => {
    expect(problemsOf({ RELAY_TLS: 'maybe', MAIL_HOSTNAME: 'not a host', RELAY_TLS_CA: '/nonexistent/ca.pem' })).toEqual([
      `RELAY_TLS_CA names a file that does not exist: ${path.resolve('/nonexistent/ca.pem')}`,
      'RELAY_TLS must be require, opportunistic or off, got "maybe"',
      'MAIL_HOSTNAME must be a host name (letters, digits, hyphens and dots), got "not a host"',
    ]);
    expect(problemsOf({ RELAY_URL: 'smtps://relay.example.com', RELAY_TLS: 'off' })).toEqual([
      'RELAY_TLS=off cannot apply to an smtps:// RELAY_URL, which is TLS from the first byte: use smtp:// or another RELAY_TLS',
    ]);
    expect(problemsOf({ RELAY_TLS: 'off', RELAY_TLS_INSECURE: 'on' })).toEqual([
      'RELAY_TLS_CA and RELAY_TLS_INSECURE have no effect with RELAY_TLS=off: remove them or choose require or opportunistic',
    ]);
    expect(problemsOf({ RELAY_TLS_CA: keyFile })).toEqual([
      `RELAY_TLS_CA must be a PEM file of certificates ("-----BEGIN CERTIFICATE-----"): ${keyFile}`,
    ]);
    expect(problemsOf({ RELAY_TLS: 'REQUIRE', RELAY_TLS_CA: certFile, MAIL_HOSTNAME: 'Mail.Example.COM.' })).toEqual([]);
  });

  it('warns about the insecure switch and about a name that is not a public domain', () => {
    const base = { DATA_DIR: makeTempDir('outbox-config-') };
    expect(configWarnings(loadConfig({ ...base, MAIL_HOSTNAME: 'mail.example.com' }))).toEqual([
      'MAIL_HOSTNAME "mail.example.com" is not a domain of the public DNS: providers may distrust the EHLO name and Message-IDs',
    ]);
    expect(configWarnings(loadConfig({ ...base, MAIL_HOSTNAME: 'mail.outbox.eu', RELAY_TLS_INSECURE: 'on' }))).toEqual([
      expect.stringMatching(/^RELAY_TLS_INSECURE=on: the relay's certificate is not checked/),
    ]);
    expect(configWarnings(loadConfig({ ...base, MAIL_HOSTNAME: 'mail.outbox.eu' }))).toEqual([]);
    expect(['outbox.local', 'localhost', 'box', 'a.test', '10.0.0.1', 'mail.internal'].filter(isPublicDomain)).toEqual([]);
  });
});

describe('relay TLS end to end: a self-signed STARTTLS relay', () => {
  let relay: SmtpPeer | undefined;
  let environment: OutboxEnvironment | undefined;
  let running: RunningOutbox | undefined;
  let received = 0;

  afterEach(async () => {
    await running?.stop();
    running = undefined;
    await relay?.close();
    relay = undefined;
    await environment?.dispose();
  });

  async function startRelay(): Promise<string> {
    relay = await startSmtpPeer({
      key: fs.readFileSync(keyFile),
      cert: fs.readFileSync(certFile),
      onData(stream, _session, callback) {
        stream.resume();
        stream.once('end', () => {
          received += 1;
          callback(null, 'OK');
        });
      },
    });
    return relay.url;
  }

  async function deliverOne(env: Record<string, string>) {
    environment = await freshEnvironment({ RETRY_MAX_ATTEMPTS: '1', ...env });
    running = await startInProcess(environment.env);
    const principal = await running.services.auth.findApiKeyPrincipal(await running.services.auth.createApiKey('shop'));
    const [mail] = await running.services.submissions.submitJson(
      principal!,
      [{ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'tls', text: 'x' }],
      false,
    );
    const deadline = Date.now() + 20_000;
    for (;;) {
      const detail = await running.services.mails.getMailDetail(mail!.id);
      if (detail.status !== MailStatus.Queued && detail.status !== MailStatus.Processing) return detail;
      if (Date.now() > deadline) throw new Error('mail did not finish');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('by default the mail ends in Error and its reply names the cause and the settings that fix it', async () => {
    const detail = await deliverOne({ RELAY_URL: await startRelay() });
    expect(detail.status).toBe(MailStatus.Error);
    expect(detail.providerReply).toMatch(/^TLS with the relay failed: .*self[- ]signed certificate/);
    expect(detail.providerReply).toContain('RELAY_TLS_CA');
    expect(received).toBe(0);
  });

  it('a relay URL with credentials and a relay offering no STARTTLS: no AUTH is ever sent, the mail is not sent in clear (issue 24 item 1)', async () => {
    const logins: string[] = [];
    relay = await startSmtpPeer({
      disabledCommands: ['STARTTLS'],
      authOptional: false,
      allowInsecureAuth: true,
      onAuth(auth, _session, callback) {
        logins.push(auth.method);
        callback(null, { user: auth.username });
      },
      onData(stream, _session, callback) {
        stream.resume();
        stream.once('end', () => {
          received += 1;
          callback(null, 'OK');
        });
      },
    });
    const port = relay.port;
    received = 0;
    const detail = await deliverOne({ RELAY_URL: `smtp://shop:s3cret@127.0.0.1:${port}` });
    expect(detail.status).toBe(MailStatus.Error);
    expect(detail.providerReply).toMatch(/^The relay refused STARTTLS .*RELAY_TLS=require needs it/);
    expect(logins).toEqual([]);
    expect(received).toBe(0);
  });

  it('with RELAY_TLS_CA naming the certificate, the mail is delivered over verified TLS', async () => {
    const detail = await deliverOne({ RELAY_URL: await startRelay(), RELAY_TLS: 'require', RELAY_TLS_CA: certFile });
    expect(detail.status).toBe(MailStatus.ProviderSent);
    expect(received).toBe(1);
  });
});
