/**
 * The listeners' exposure, as the configuration check reads it: the SMTP listener on loopback unless SMTP_HOST says
 * otherwise, and a warning at every start for a listener or a proxy setting that exposes more than it
 * seems to (an SMTP listener off loopback without TLS, TRUST_PROXY hops with HOST off loopback, a relay
 * login in clear), and METRICS_TOKEN's check.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, configWarnings, isLoopbackHost, loadConfig } from '../../src/config.js';
import { makeTempDir } from '../support/context.js';

const dataDir = makeTempDir('outbox-config-');
// A public name, so MAIL_HOSTNAME's own warning stays out of these lists.
const configOf = (env: Record<string, string>) => loadConfig({ DATA_DIR: dataDir, MAIL_HOSTNAME: 'mail.outbox.eu', ...env });
const warningsOf = (env: Record<string, string>) => configWarnings(configOf(env));

describe('listener and proxy settings', () => {
  it('binds the SMTP listener to loopback whatever HOST is, unless SMTP_HOST is set', () => {
    expect(configOf({ HOST: '0.0.0.0' })).toMatchObject({ host: '0.0.0.0', smtpHost: '127.0.0.1', smtpMaxConnectionsPerClient: 10 });
    expect(configOf({ SMTP_HOST: '0.0.0.0', SMTP_MAX_CONNECTIONS_PER_CLIENT: '3' })).toMatchObject({
      smtpHost: '0.0.0.0',
      smtpMaxConnectionsPerClient: 3,
    });
    expect(warningsOf({ HOST: '0.0.0.0' })).toEqual([]);
  });

  it('SMTP_NO_PROGRESS_TIMEOUT: 60 s by default, a duration from 1 s to 1 h, anything else refused by name', () => {
    expect(configOf({}).smtpNoProgressMs).toBe(60_000);
    expect(configOf({ SMTP_NO_PROGRESS_TIMEOUT: '5s' }).smtpNoProgressMs).toBe(5_000);
    expect(configOf({ SMTP_NO_PROGRESS_TIMEOUT: '1h' }).smtpNoProgressMs).toBe(3_600_000);
    for (const bad of ['0', '500ms', '2h', 'soon'])
      expect(() => configOf({ SMTP_NO_PROGRESS_TIMEOUT: bad }), bad).toThrow(/SMTP_NO_PROGRESS_TIMEOUT must be a duration/);
  });

  it('warns about an SMTP listener off loopback without TLS, and not with TLS or with the listener off', () => {
    expect(warningsOf({ SMTP_HOST: '0.0.0.0' })).toEqual([
      'SMTP_HOST=0.0.0.0 without SMTP_TLS_KEY and SMTP_TLS_CERT: SMTP clients send their API key in clear over the network; configure TLS or listen on loopback',
    ]);
    expect(warningsOf({ SMTP_HOST: '0.0.0.0', SMTP_PORT: 'off' })).toEqual([]);
    expect(warningsOf({ SMTP_HOST: '::1' })).toEqual([]);
  });

  it('warns about TRUST_PROXY hops when HOST is not loopback, and not for a list of proxies', () => {
    expect(warningsOf({ TRUST_PROXY: '1', HOST: '0.0.0.0' })).toEqual([
      expect.stringMatching(/^TRUST_PROXY=1 with HOST=0\.0\.0\.0: a client that reaches Outbox without the proxy can name any address/),
    ]);
    expect(warningsOf({ TRUST_PROXY: '1' })).toEqual([]);
    expect(warningsOf({ TRUST_PROXY: '10.0.0.1', HOST: '0.0.0.0' })).toEqual([]);
  });

  it('warns about a relay login or a remote relay with RELAY_TLS=off', () => {
    expect(warningsOf({ RELAY_URL: 'smtp://u:p@127.0.0.1:2525', RELAY_TLS: 'off' })).toEqual([
      expect.stringMatching(
        /^RELAY_TLS=off with credentials in RELAY_URL: the relay password and every mail cross the network unencrypted/,
      ),
    ]);
    expect(warningsOf({ RELAY_URL: 'smtp://relay.example.com', RELAY_TLS: 'off' })).toEqual([
      expect.stringMatching(/^RELAY_TLS=off towards relay\.example\.com: every mail crosses the network unencrypted/),
    ]);
    expect(warningsOf({ RELAY_URL: 'smtp://127.0.0.1:2525', RELAY_TLS: 'off' })).toEqual([]);
  });

  it('checks METRICS_TOKEN', () => {
    expect(configOf({ METRICS_TOKEN: 'a'.repeat(16) }).metricsToken).toBe('a'.repeat(16));
    expect(() => configOf({ METRICS_TOKEN: 'short' })).toThrow(ConfigError);
    expect(() => configOf({ METRICS_TOKEN: 'with a space in it, long enough' })).toThrow(
      /METRICS_TOKEN must be at least 16 characters without spaces/,
    );
  });

  it('knows loopback hosts', () => {
    expect(['localhost', '127.0.0.1', '127.8.9.1', '::1', '[::1]', '::ffff:127.0.0.1', 'LOCALHOST'].every(isLoopbackHost)).toBe(true);
    expect(['0.0.0.0', '::', '10.0.0.1', 'example.com', '192.168.1.1', 'localhost.example.com'].some(isLoopbackHost)).toBe(false);
  });
});
