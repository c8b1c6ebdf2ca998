/** BOUNCE_DOMAIN, BOUNCE_SMTP_PORT, BOUNCE_SMTP_HOST and BOUNCES: defaults and refusals naming the variable. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { configProblems } from '../support/config-problems.js';

const DATA_DIR = '/tmp/outbox-config-bounces';

const problemsOf = (env: Record<string, string>): string[] => configProblems({ DATA_DIR, ...env });

describe('bounce settings', () => {
  it('are off by default; the domain is lower-cased without its final dot; the listener binds loopback', () => {
    expect(loadConfig({ DATA_DIR })).toMatchObject({
      bounceDomain: undefined,
      bounceSmtpPort: 0,
      bounceSmtpHost: '127.0.0.1',
      bounces: true,
    });
    expect(loadConfig({ DATA_DIR, BOUNCE_DOMAIN: 'Bounces.Example.COM.', BOUNCE_SMTP_PORT: '2526', BOUNCES: 'off' })).toMatchObject({
      bounceDomain: 'bounces.example.com',
      bounceSmtpPort: 2526,
      bounces: false,
    });
    expect(loadConfig({ DATA_DIR, BOUNCE_SMTP_PORT: 'off' }).bounceSmtpPort).toBe(0);
  });

  it('refuse a bad domain, a bad port, a listener without a domain, a bad host and a bad switch, naming each', () => {
    expect(problemsOf({ BOUNCE_DOMAIN: 'not a domain' })).toEqual([
      'BOUNCE_DOMAIN must be a domain (letters, digits, hyphens and dots), got "not a domain"',
    ]);
    expect(problemsOf({ BOUNCE_DOMAIN: 'b.example.com', BOUNCE_SMTP_PORT: '70000' })).toEqual([
      'BOUNCE_SMTP_PORT must be a whole number from 0 to 65535, got "70000"',
    ]);
    expect(problemsOf({ BOUNCE_SMTP_PORT: '2526' })).toEqual([
      'BOUNCE_SMTP_PORT needs BOUNCE_DOMAIN: the listener accepts only return paths of that domain',
    ]);
    expect(problemsOf({ BOUNCE_DOMAIN: 'b.example.com', BOUNCE_SMTP_HOST: 'bad host!' })).toEqual([
      'BOUNCE_SMTP_HOST must be an IP address or a host name, got "bad host!"',
    ]);
    expect(problemsOf({ BOUNCES: 'sometimes' })).toEqual(['BOUNCES must be on or off, got "sometimes"']);
  });
});
