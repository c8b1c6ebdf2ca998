import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { buildMessage, createMessageId, isValidAddress, validateHeaders } from '../../src/submission/message-builder.js';
import { newEventId } from '../../src/events/application-events.repository.js';
import { getMessageIdDomain, setMailHostname } from '../../src/submission/mail-hostname.js';

function headerBlock(raw: Buffer): string {
  const text = raw.toString('utf8');
  return text.slice(0, text.indexOf('\r\n\r\n'));
}

describe('buildMessage', () => {
  const base = {
    fromName: 'Shop',
    fromMail: 'shop@example.com',
    to: [{ recipientName: 'Ann Example', recipientMail: 'ann@example.com' }],
    subject: 'Your order',
    text: 'Thanks!',
  };

  it('puts Bcc in the envelope but not in the raw headers', async () => {
    const message = await buildMessage({
      ...base,
      cc: [{ recipientMail: 'cc@example.org' }],
      bcc: [{ recipientName: 'Secret', recipientMail: 'hidden@example.net' }],
    });
    expect(message.envelope).toEqual({
      from: 'shop@example.com',
      to: ['ann@example.com', 'cc@example.org', 'hidden@example.net'],
    });
    const raw = message.raw.toString('utf8');
    expect(raw).not.toMatch(/^bcc:/im);
    expect(raw).not.toContain('hidden@example.net');
    const parsed = await simpleParser(message.raw);
    expect(parsed.from?.value[0]).toMatchObject({ name: 'Shop', address: 'shop@example.com' });
    expect(parsed.cc && !Array.isArray(parsed.cc) ? parsed.cc.text : undefined).toBe('cc@example.org');
    expect(parsed.subject).toBe('Your order');
    expect(parsed.text?.trim()).toBe('Thanks!');
  });

  it("draws Message-IDs and event ids time first, so one commit's ids sit side by side in their indexes", async () => {
    const messageIds = Array.from({ length: 200 }, () => createMessageId('mail.example.com'));
    expect(new Set(messageIds).size).toBe(200);
    for (const id of messageIds)
      expect(id).toMatch(/^<[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}@mail\.example\.com>$/);
    // Version 7: the first 48 bits are the millisecond it was drawn.
    const millisecondOf = (id: string) => parseInt(id.slice(1, 14).replace('-', ''), 16);
    const before = Date.now();
    const later = createMessageId('mail.example.com');
    expect(millisecondOf(later)).toBeGreaterThanOrEqual(before);
    expect(millisecondOf(later)).toBeLessThanOrEqual(Date.now());
    expect([...messageIds, later].toSorted()).toEqual(
      [...messageIds, later].sort((a, b) => millisecondOf(a) - millisecondOf(b) || (a < b ? -1 : 1)),
    );

    const eventIds = Array.from({ length: 200 }, () => newEventId());
    expect(new Set(eventIds).size).toBe(200);
    for (const id of eventIds) expect(id).toMatch(/^evt_[a-z2-7]{26}$/);
    // Drawn within a second of each other, they share the characters of the time's upper bits.
    expect(new Set(eventIds.map((id) => id.slice(0, 4 + 7))).size).toBeLessThanOrEqual(2);
  });

  it('generates a <uuid@MAIL_HOSTNAME> Message-ID, or keeps the one given', async () => {
    setMailHostname('mail.example.com');
    const generated = await buildMessage(base).finally(() => setMailHostname(undefined));
    expect(generated.messageId).toMatch(/^<[0-9a-f-]{36}@mail\.example\.com>$/);
    expect(headerBlock(generated.raw)).toContain(`Message-ID: ${generated.messageId}`);

    const given = await buildMessage({ ...base, messageId: '<fixed-1@example.com>', date: new Date(Date.UTC(2026, 0, 1)) });
    expect(given.messageId).toBe('<fixed-1@example.com>');
    expect(headerBlock(given.raw)).toContain('Message-ID: <fixed-1@example.com>');
    expect(headerBlock(given.raw)).toContain('Date: Thu, 01 Jan 2026 00:00:00 +0000');
  });

  it('adds custom headers and uses CRLF line endings only, ending with CRLF', async () => {
    const message = await buildMessage({
      ...base,
      text: 'a\nb\n.\nc',
      headers: { 'X-Campaign': 'spring', 'Reply-To': 'help@example.com' },
    });
    const raw = message.raw.toString('latin1');
    expect(headerBlock(message.raw)).toContain('X-Campaign: spring');
    expect(raw).not.toMatch(/[^\r]\n/);
    expect(raw.endsWith('\r\n')).toBe(true);
  });

  it('refuses header injection and reserved headers with a 400 naming the field', async () => {
    const attempt = buildMessage({ ...base, headers: { 'X-Evil': 'x\r\nBcc: victim@example.com' } });
    await expect(attempt).rejects.toBeInstanceOf(AppError);
    await expect(attempt).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('headers.X-Evil must not contain CR or LF'),
    });
    await expect(buildMessage({ ...base, headers: { Subject: 'other' } })).rejects.toMatchObject({
      message: expect.stringContaining('headers.Subject'),
    });
  });

  it('refuses invalid addresses, naming each one, and a mail without recipients', async () => {
    await expect(
      buildMessage({ ...base, fromMail: 'nope', to: [{ recipientMail: 'ok@example.com' }, { recipientMail: 'a b@example.com' }] }),
    ).rejects.toMatchObject({ message: 'fromMail is not a valid address; to[1].recipientMail is not a valid address' });
    await expect(buildMessage({ ...base, to: [] })).rejects.toMatchObject({
      message: 'to, cc or bcc must name at least one recipient',
    });
    await expect(buildMessage({ ...base, messageId: 'no-brackets@example.com' })).rejects.toMatchObject({
      message: 'messageId must look like <id@domain>',
    });
  });

  it('encodes non-ASCII names and subjects', async () => {
    const message = await buildMessage({ ...base, fromName: 'Zoë Ünïcode', subject: 'Grüße 👋' });
    expect(headerBlock(message.raw)).not.toMatch(/[^\x00-\x7f]/);
    const parsed = await simpleParser(message.raw);
    expect(parsed.subject).toBe('Grüße 👋');
    expect(parsed.from?.value[0]?.name).toBe('Zoë Ünïcode');
  });
});

describe('validateHeaders', () => {
  it('accepts ordinary custom headers', () => {
    expect(validateHeaders({ 'X-Foo': 'bar', 'List-Unsubscribe': '<mailto:u@example.com>', 'Reply-To': 'a@example.com' })).toEqual([]);
    expect(validateHeaders(undefined)).toEqual([]);
  });

  it('refuses CR or LF in names and values', () => {
    expect(validateHeaders({ 'X-Foo': 'a\rb' })).toEqual(['headers.X-Foo must not contain CR or LF']);
    expect(validateHeaders({ 'X-Foo': 'a\nb' })).toEqual(['headers.X-Foo must not contain CR or LF']);
    expect(validateHeaders({ 'X-Foo\r\nBcc': 'x' })).toEqual(['headers.X-Foo\r\nBcc must not contain CR or LF']);
  });

  it('refuses names that are not RFC 5322 field names', () => {
    for (const name of ['X Foo', 'X:Foo', '', 'Tëst']) {
      expect(validateHeaders({ [name]: 'v' })).toEqual([
        `headers.${name} is not a valid header name (printable ASCII without spaces or ":")`,
      ]);
    }
  });

  it('refuses the headers the builder sets, in any case', () => {
    const reserved = [
      'From',
      'to',
      'CC',
      'Bcc',
      'Subject',
      'message-id',
      'Date',
      'MIME-Version',
      'Content-Type',
      'Content-Transfer-Encoding',
    ];
    const problems = validateHeaders(Object.fromEntries(reserved.map((name) => [name, 'x'])));
    expect(problems).toHaveLength(reserved.length);
    expect(problems[0]).toBe('headers.From is set by Outbox and cannot be given as a custom header');
  });

  it('lists every problem at once', () => {
    expect(validateHeaders({ 'X-A': 'ok', 'X-B': 'bad\n', Date: 'x', 'X-C': 5 })).toEqual([
      'headers.X-B must not contain CR or LF',
      'headers.Date is set by Outbox and cannot be given as a custom header',
      'headers.X-C must be a string',
    ]);
  });
});

describe('isValidAddress', () => {
  it.each([
    'a@example.com',
    'first.last+tag@sub.example.co.uk',
    'user@localhost',
    'user@[127.0.0.1]',
    'user@[IPv6:::1]',
    'x@reject.test',
    'josé@bücher.de',
  ])('accepts %s', (address) => {
    expect(isValidAddress(address)).toBe(true);
  });

  it.each([
    '',
    'plain',
    '@example.com',
    'a@',
    'a b@example.com',
    'a@exa mple.com',
    'a@example',
    '<a@example.com>',
    'a@example.com\r\nRCPT TO:<b@example.com>',
    'a\n@example.com',
    '.a@example.com',
    'a..b@example.com',
    'a@-example.com',
    'a@example..com',
    'a@[300.0.0.1]',
    'a,b@example.com',
    `${'x'.repeat(250)}@example.com`,
  ])('refuses %j', (address) => {
    expect(isValidAddress(address)).toBe(false);
  });
});

describe('issue 10 and 11: refused headers, recipient limit, null sender, MAIL_HOSTNAME', () => {
  const base = { fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.com' }], subject: 'Hi', text: 'x' };

  it.each([
    ['Return-Path', 'is written by the final delivery server from the envelope sender'],
    ['Received', 'is a trace header written by each server the mail passes through'],
    ['DKIM-Signature', 'is a signature that only the signing server may add'],
    ['ARC-Seal', 'is a signature that only the signing server may add'],
    ['ARC-Message-Signature', 'is a signature that only the signing server may add'],
    ['ARC-Authentication-Results', 'is a signature that only the signing server may add'],
    ['Authentication-Results', 'is written by the receiving server after its checks'],
    ['Sender', 'names the submitter, which is Outbox, and would let a mail claim another'],
    ['Content-Disposition', 'belongs to the MIME parts Outbox composes, not to the whole message'],
    ['Content-ID', 'belongs to the MIME parts Outbox composes, not to the whole message'],
    ['Resent-From', 'is written by whoever re-sends a mail'],
    ['resent-date', 'is written by whoever re-sends a mail'],
    ['RESENT-MESSAGE-ID', 'is written by whoever re-sends a mail'],
    ['__proto__', 'is not a header name'],
  ])('refuses %s as a custom header', (name, reason) => {
    // JSON.parse makes `__proto__` an own property, which is how it reaches the builder from a request.
    const headers = JSON.parse(`{${JSON.stringify(name)}:"x"}`) as Record<string, unknown>;
    expect(Object.keys(headers)).toEqual([name]);
    expect(validateHeaders(headers)).toEqual([`headers.${name} cannot be given as a custom header: it ${reason}`]);
  });

  it('still takes ordinary custom headers', () => {
    expect(validateHeaders({ 'X-Campaign': 'winter', 'List-Unsubscribe': '<mailto:u@example.com>', 'Reply-To': 'a@example.com' })).toEqual(
      [],
    );
  });

  it('caps to, cc and bcc together at MAX_RECIPIENTS_PER_MAIL', async () => {
    const many = (n: number, domain: string) => Array.from({ length: n }, (_, i) => ({ recipientMail: `r${i}@${domain}` }));
    await expect(
      buildMessage({ ...base, to: many(100, 'a.example'), cc: many(100, 'b.example'), bcc: many(100, 'c.example') }),
    ).resolves.toBeDefined();
    await expect(
      buildMessage({ ...base, to: many(150, 'a.example'), cc: many(100, 'b.example'), bcc: many(51, 'c.example') }),
    ).rejects.toThrow('to, cc and bcc together name 301 recipients; a mail has at most 300');
  });

  it('uses the null sender in the envelope only when asked, the From header unchanged', async () => {
    const normal = await buildMessage(base);
    const nullSender = await buildMessage({ ...base, nullSender: true });
    expect(normal.envelope.from).toBe('shop@example.com');
    expect(nullSender.envelope.from).toBe('');
    expect(nullSender.raw.toString()).toMatch(/^From: shop@example\.com\r$/m);
  });

  it('takes the Message-ID domain from MAIL_HOSTNAME, else the host', () => {
    setMailHostname('mail.example.com');
    try {
      expect(getMessageIdDomain()).toBe('mail.example.com');
    } finally {
      setMailHostname(undefined);
    }
    expect(getMessageIdDomain()).not.toBe('mail.example.com');
    expect(getMessageIdDomain()).not.toBe('outbox.local');
  });
});
