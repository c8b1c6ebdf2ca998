/** Who counts as one client for the SMTP listeners' per-client limits (net/smtp-session-limits.ts, docs/limits.md). */
import { describe, expect, it } from 'vitest';
import { clientKey } from '../../src/net/smtp-session-limits.js';

describe('the client key of the SMTP listeners', () => {
  it('is the IPv4 address, whether seen over IPv4 or through an IPv6 socket', () => {
    expect(clientKey('192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('::FFFF:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('192.0.2.8')).not.toBe(clientKey('192.0.2.7'));
  });

  it('is the /64 of an IPv6 address: one host rotating through its /64 stays one client; another /64 is another', () => {
    const key = clientKey('2001:db8:1:2::1');
    expect(key).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8:1:2:ffff:ffff:ffff:fffe')).toBe(key);
    expect(clientKey('2001:0db8:0001:0002:0000:0000:0000:abcd')).toBe(key);
    expect(clientKey('fe80::1%eth0')).toBe(clientKey('fe80::2'));
    expect(clientKey('2001:db8:1:3::1')).not.toBe(key);
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
  });
});
