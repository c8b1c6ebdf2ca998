/** Which addresses are public (net/address-guard.ts), and the guarded lookup on real name resolution. */
import { describe, expect, it } from 'vitest';
import { AddressRefusedError, checkHostIsPublic, checkLiteralHost, guardedLookup, isPublicAddress } from '../../src/net/address-guard.js';

describe('isPublicAddress', () => {
  it.each([
    ['93.184.215.14', true],
    ['8.8.8.8', true],
    ['2606:4700:4700::1111', true],
    ['127.0.0.1', false],
    ['127.8.9.10', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['192.168.1.1', false],
    ['100.64.0.1', false],
    ['169.254.169.254', false],
    ['0.0.0.0', false],
    ['255.255.255.255', false],
    ['224.0.0.1', false],
    ['192.0.2.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fe80::1%eth0', false],
    ['fc00::1', false],
    ['fd12:3456::1', false],
    ['ff02::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:8.8.8.8', true],
    ['2002:7f00:1::1', false],
    ['64:ff9b::7f00:1', false],
    // IPv4-compatible ::/96, judged as the IPv4 inside.
    ['::7f00:1', false],
    ['::127.0.0.1', false],
    ['::a00:1', false],
    ['::c0a8:101', false],
    ['::a9fe:a9fe', false],
    ['::808:808', true],
    ['not an address', false],
  ])('%s → %s', (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });
});

describe('checks on hosts', () => {
  it('refuses private IP literals, bracketed IPv6 too, and lets names through to the lookup', () => {
    expect(() => checkLiteralHost('127.0.0.1')).toThrow(AddressRefusedError);
    expect(() => checkLiteralHost('[::1]')).toThrow(AddressRefusedError);
    expect(() => checkLiteralHost('[::ffff:7f00:1]')).toThrow(AddressRefusedError);
    expect(() => checkLiteralHost('[::7f00:1]')).toThrow(AddressRefusedError);
    expect(() => checkLiteralHost('8.8.8.8')).not.toThrow();
    expect(() => checkLiteralHost('example.com')).not.toThrow();
  });

  it('refuses a name that resolves to loopback, at check and at connect', async () => {
    await expect(checkHostIsPublic('localhost')).rejects.toThrow(/localhost resolves to .* not a public address/);
    const error = await new Promise<Error | null>((resolve) => guardedLookup('localhost', {}, (e) => resolve(e)));
    expect(error).toBeInstanceOf(AddressRefusedError);
    const all = await new Promise<Error | null>((resolve) => guardedLookup('localhost', { all: true }, (e) => resolve(e)));
    expect(all).toBeInstanceOf(AddressRefusedError);
  });
});
