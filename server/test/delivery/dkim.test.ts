/**
 * DKIM signing at send time: a key made by `generateDkimKey` (the CLI's), the relay transport signing what it sends
 * to a real SMTP peer on loopback, and mailauth verifying what the peer received against the published record
 * (its DNS resolver answering with the generated TXT record); one changed header byte fails the check.
 */
import fs from 'node:fs';
import path from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createDkimSigner, generateDkimKey } from '../../src/delivery/dkim.js';
import { createRelayTransport, type RelayTransport } from '../../src/delivery/relay-transport.js';
import { makeTempDir } from '../support/context.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let relay: TestRelay;
let transport: RelayTransport;
let dir: string;
const key = generateDkimKey('shop.example', 'outbox1');

beforeAll(async () => {
  dir = makeTempDir('outbox-dkim-');
  const file = path.join(dir, 'dkim.pem');
  fs.writeFileSync(file, key.privateKeyPem);
  relay = await startTestRelay();
  transport = createRelayTransport(relay.url, {
    sign: createDkimSigner({ domain: 'shop.example', selector: 'outbox1', privateKeyFile: file }),
    connectionTimeoutMs: 15_000,
    socketTimeoutMs: 15_000,
  });
});
afterAll(async () => {
  await transport.close();
  await relay.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const resolver = async (name: string, type: string) => {
  if (type === 'TXT' && name === key.recordName) return [[key.recordValue]];
  throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
};

describe('DKIM signing', () => {
  it('signs at send time; the signature verifies against the published key and fails when one header byte changes', async () => {
    const stored = Buffer.from(
      'From: Shop <orders@shop.example>\r\nTo: ann@example.net\r\nSubject: Your order\r\nDate: Thu, 26 Nov 2026 12:00:00 +0000\r\nMessage-ID: <dkim-1@shop.example>\r\n\r\nThanks!\r\n',
    );
    const outcome = await transport.send({ envelope: { from: 'orders@shop.example', to: ['ann@example.net'] }, raw: stored });
    expect(outcome.kind).toBe('sent');
    const received = relay.received.at(-1)!.raw;
    expect(received.toString()).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=shop\.example;/);
    expect(received.subarray(received.length - stored.length).equals(stored)).toBe(true);

    const good = await dkimVerify(received, { resolver });
    expect(good.results.map((r) => [r.signingDomain, r.status.result])).toEqual([['shop.example', 'pass']]);

    const tampered = Buffer.from(received.toString().replace('Subject: Your order', 'Subject: Your ordex'));
    const bad = await dkimVerify(tampered, { resolver });
    expect(bad.results.map((r) => r.status.result)).toEqual(['fail']);
  });

  it('DKIM_* are set together or not at all; the key file must exist', () => {
    const base = { DATA_DIR: dir };
    const file = path.join(dir, 'dkim.pem');
    expect(loadConfig({ ...base, DKIM_DOMAIN: 'Shop.Example', DKIM_SELECTOR: 'outbox1', DKIM_PRIVATE_KEY_FILE: file }).dkim).toEqual({
      domain: 'shop.example',
      selector: 'outbox1',
      privateKeyFile: file,
    });
    expect(loadConfig(base).dkim).toBeUndefined();
    expect(() => loadConfig({ ...base, DKIM_DOMAIN: 'shop.example' })).toThrow(
      /DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY_FILE must be set together/,
    );
    expect(() =>
      loadConfig({ ...base, DKIM_DOMAIN: 'shop.example', DKIM_SELECTOR: 's', DKIM_PRIVATE_KEY_FILE: path.join(dir, 'missing.pem') }),
    ).toThrow(/DKIM_PRIVATE_KEY_FILE names a file that does not exist/);
  });
});
