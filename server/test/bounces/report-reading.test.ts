/**
 * The pure parts of bounce handling: the return path's address and check (return-path.ts), and reading reports
 * as MTAs write them (report-parser.ts): folded fields, several recipients, a Postfix-style DSN, an ARF report
 * without Original-Rcpt-To, and bytes that are no report at all.
 */
import { describe, expect, it } from 'vitest';
import { addressOfField, parseReport, readFieldBlocks } from '../../src/bounces/report-parser.js';
import { createReturnPathCodec, legacyReturnPath } from '../../src/bounces/return-path.js';
import { arf, dsn } from './bounce-support.js';

describe('the return path', () => {
  const codec = createReturnPathCodec('secret-one', 'Bounces.Example.com');

  it('names the mail and the recipient and is checked by its HMAC, case-insensitively; another secret does not validate it', () => {
    const address = codec.addressOf(4711, 2);
    expect(address).toMatch(/^b-4711-2-[a-z2-7]{10}@bounces\.example\.com$/);
    expect(codec.addressOf(4711, 2)).toBe(address);
    expect(codec.addressOf(4711, 1)).not.toBe(address);
    expect(codec.parse(address)).toEqual({ mailId: 4711, recipient: 2 });
    expect(codec.parse(address.toUpperCase())).toEqual({ mailId: 4711, recipient: 2 });
    expect(createReturnPathCodec('secret-two', 'bounces.example.com').parse(address)).toBeUndefined();
    expect(codec.parse(address.replace('4711', '4712'))).toBeUndefined();
    // Another recipient's place with this one's HMAC: refused (a recipient cannot name another).
    expect(codec.parse(address.replace('-2-', '-1-'))).toBeUndefined();
    expect(codec.parse(address.replace('@bounces.example.com', '@example.com'))).toBeUndefined();
    expect(codec.addressOf(4711, 0).split('@')[0]!.length).toBeLessThanOrEqual(64);
    for (const bad of [
      '',
      'b-1-@bounces.example.com',
      'b-1-0-@bounces.example.com',
      'b-0-aaaaaaaaaa@bounces.example.com',
      'b-1-01-aaaaaaaaaa@bounces.example.com',
      'b-99999999999999999-aaaaaaaaaa@bounces.example.com',
      'postmaster',
    ]) {
      expect(codec.parse(bad), bad).toBeUndefined();
    }
  });

  it('still reads the per-mail form of earlier releases (no recipient named), for mails sent before the change', () => {
    const legacy = legacyReturnPath('secret-one', 'Bounces.Example.com', 4711);
    expect(legacy).toMatch(/^b-4711-[a-z2-7]{10}@bounces\.example\.com$/);
    expect(codec.parse(legacy)).toEqual({ mailId: 4711, recipient: undefined });
    expect(codec.parse(legacy.replace('4711', '4712'))).toBeUndefined();
  });
});

describe('reading reports', () => {
  it('unfolds continued fields and keeps repeated ones', () => {
    const [first, second] = readFieldBlocks('A: one\r\n two\r\nB: x\r\nB: y\r\n\r\nC: z\r\n');
    expect(first).toEqual(
      new Map([
        ['a', 'one two'],
        ['b', 'x\ny'],
      ]),
    );
    expect(second).toEqual(new Map([['c', 'z']]));
    expect(addressOfField('rfc822; Ann <ANN@Example.com>')).toBe('ann@example.com');
    expect(addressOfField('rfc822;bob@example.org')).toBe('bob@example.org');
    expect(addressOfField('rfc822; not an address')).toBeNull();
  });

  it('a DSN with two recipients: each with its action, status and diagnostic; the returned Message-ID', async () => {
    const report = await parseReport(
      Buffer.from(
        dsn({
          returnPath: 'b-1-aaaaaaaaaa@b.test',
          messageId: '<m1@example.com>',
          recipients: [
            { address: 'Gone@Example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' },
            { address: 'slow@example.net', action: 'delayed', status: '4.4.7' },
          ],
        }),
      ),
    );
    expect(report).toMatchObject({
      kind: 'dsn',
      originalMessageId: '<m1@example.com>',
      problem: null,
      subject: 'Undelivered Mail Returned to Sender',
    });
    expect(report.recipients).toEqual([
      { recipient: 'gone@example.net', action: 'failed', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 user unknown' },
      { recipient: 'slow@example.net', action: 'delayed', status: '4.4.7', diagnostic: null },
    ]);
  });

  it('a complaint: its type, user agent and Original-Rcpt-To; without that field, the returned To', async () => {
    const report = await parseReport(
      Buffer.from(arf({ returnPath: 'b-1-aaaaaaaaaa@b.test', recipient: 'angry@example.net', messageId: '<m2@x>' })),
    );
    expect(report).toMatchObject({
      kind: 'arf',
      originalMessageId: '<m2@x>',
      feedback: { type: 'abuse', recipients: ['angry@example.net'], userAgent: 'IspFeedback/1.0' },
    });
    const withoutRcpt = arf({ returnPath: 'b-1-aaaaaaaaaa@b.test', recipient: 'other@example.net' }).replace(
      /Original-Rcpt-To: .*\r\n/,
      '',
    );
    expect((await parseReport(Buffer.from(withoutRcpt))).feedback?.recipients).toEqual(['other@example.net']);
  });

  it('plain text, an empty message and random bytes are kind unknown with a reason, never an exception', async () => {
    for (const raw of [
      Buffer.from('Subject: hello\r\n\r\nI am out of office.\r\n'),
      Buffer.alloc(0),
      Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 37) % 256)),
    ]) {
      const report = await parseReport(raw);
      expect(report.kind).toBe('unknown');
      expect(report.problem).toMatch(/\S/);
    }
  });
});
