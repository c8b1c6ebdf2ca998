import { describe, expect, it } from 'vitest';
import { buildRelay, buildRelayHealth } from '../../../test/factories';
import { createBodyOf, fieldOfError, updateBodyOf } from './relay-form';
import { connectionText, latencyText, quotaText, rateText, relayRowsOf } from './relay-text';

describe('relay rows', () => {
  const relays = [buildRelay({ id: 2, name: 'us' }), buildRelay({ id: 1, name: 'eu' })];

  it('put the default relay first, then the named ones by name, each with its health line', () => {
    const rows = relayRowsOf(relays, [
      buildRelayHealth({ relay: 'default', state: 'up' }),
      buildRelayHealth({ relay: 'eu', state: 'down' }),
    ]);
    expect(rows.map((row) => [row.name, row.state, row.relay?.id ?? null])).toEqual([
      ['default', 'up', null],
      ['eu', 'down', 1],
      // Health known, but no worker reported on it.
      ['us', 'idle', 2],
    ]);
  });

  it('are unknown when the server has no relay health, and checking before its first answer', () => {
    expect(relayRowsOf(relays, null).map((row) => row.state)).toEqual(['unknown', 'unknown', 'unknown']);
    expect(relayRowsOf(relays, undefined).map((row) => row.state)).toEqual(['checking', 'checking', 'checking']);
  });
});

describe('relay figures', () => {
  it('say the rate against its limit', () => {
    expect(rateText(buildRelayHealth({ ratePerSecond: 12.54 }), 50)).toBe('12.5/s of 50/s');
    expect(rateText(buildRelayHealth({ ratePerSecond: 3 }), null)).toBe('3/s, no limit');
    expect(rateText(buildRelayHealth({ ratePerSecond: null }), null)).toBe('No limit');
    expect(rateText(buildRelayHealth({ ratePerSecond: null }), 1000)).toBe('— of 1,000/s');
    expect(rateText(null, 1000)).toBe('Limit 1,000/s');
  });

  it('say what it took today and how much of the quota is used', () => {
    expect(quotaText(buildRelayHealth({ sentToday: 1234, quotaUsed: 0.126 }), 10_000)).toEqual({
      sent: '1,234 sent today',
      quota: '13 % of 10,000 a day used',
    });
    expect(quotaText(buildRelayHealth({ sentToday: 0 }), null)).toEqual({ sent: '0 sent today', quota: 'No daily quota' });
    expect(quotaText(buildRelayHealth({ quotaUsed: null }), 500).quota).toBe('— of 500 a day used');
    expect(quotaText(null, 500)).toEqual({ sent: '—', quota: 'Quota 500 a day' });
  });

  it('say the latency and how the relay is reached', () => {
    expect([
      latencyText(buildRelayHealth({ latencyMs: 85.4 })),
      latencyText(buildRelayHealth({ latencyMs: null })),
      latencyText(null),
    ]).toEqual(['85 ms', '—', '—']);
    expect(connectionText(buildRelay({ tls: 'opportunistic', hasCredentials: false, maxConnections: 3 }))).toBe(
      'TLS when offered · no login · 3 connections',
    );
  });
});

describe('relay form bodies', () => {
  const fields = {
    name: ' eu ',
    url: 'smtps://smtp.eu.example:465',
    tls: '' as const,
    username: 'mailer',
    password: 's3cret',
    removeLogin: false,
    maxConnections: '',
    maxPerSecond: '50',
    maxPerDay: '',
  };

  it('a new relay sends what was typed, the empty fields left to the server', () => {
    expect(createBodyOf(fields)).toEqual({
      name: 'eu',
      url: 'smtps://smtp.eu.example:465',
      credentials: { username: 'mailer', password: 's3cret' },
      maxPerSecond: 50,
    });
  });

  it('an edit sends only what changed: a limit emptied is null, a login only when typed or removed', () => {
    const relay = buildRelay({ name: 'eu', url: 'smtps://smtp.eu.example:465', maxPerSecond: 50, maxPerDay: 1000, maxConnections: 5 });
    const same = { ...fields, name: 'eu', tls: relay.tls, username: '', password: '', maxConnections: '5', maxPerDay: '1000' };
    expect(updateBodyOf(relay, same)).toEqual({});
    expect(updateBodyOf(relay, { ...same, maxPerSecond: '20', maxPerDay: '' })).toEqual({ maxPerSecond: 20, maxPerDay: null });
    expect(updateBodyOf(relay, { ...same, removeLogin: true, username: 'ignored' })).toEqual({ credentials: null });
    expect(updateBodyOf(relay, { ...same, username: 'new', password: 'pw' })).toEqual({ credentials: { username: 'new', password: 'pw' } });
  });

  it('a refusal names its field', () => {
    expect(fieldOfError('body.url must start with smtp:// or smtps://.')).toBe('url');
    expect(fieldOfError('body.maxPerSecond must be >= 1.')).toBe('maxPerSecond');
    expect(fieldOfError('body.credentials.password must NOT have fewer than 1 characters.')).toBe('password');
    expect(fieldOfError('body.credentials and a login in body.url were both given; give one.')).toBe('password');
    expect(fieldOfError('A relay named eu exists already; pick another name.')).toBeNull();
  });
});
