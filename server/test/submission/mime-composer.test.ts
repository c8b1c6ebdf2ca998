/**
 * The composer of the request path (mime-composer.ts, with mime-serializer.ts for the inputs it passes
 * on) writes, byte for byte, what nodemailer's MailComposer built and streamed before it
 * (docs/benchmarks.md): same Message-ID, Date and boundary in, same bytes out. The reference below is the
 * code buildMessage ran until then, kept verbatim.
 */
import fc from 'fast-check';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { buildMessage, composerOptions, type MessageInput } from '../../src/submission/message-builder.js';
import { composeMime } from '../../src/submission/mime-composer.js';

const fixed = { messageId: '<3b9a4c1e-0d1f-4c36-9d0e-5f7f9b1e2a10@mail.example.com>', date: new Date(Date.UTC(2026, 10, 23, 18, 30, 5)) };

/** What buildMessage returned before: MailComposer#compile, MimeNode#build (streams), then CRLF line ends. */
async function reference(input: MessageInput, baseBoundary: string): Promise<Buffer> {
  const built = await new MailComposer(composerOptions(input, input.messageId!, input.date!, baseBoundary)).compile().build();
  let text = built.toString('latin1').replace(/\r?\n/g, '\r\n');
  if (!text.endsWith('\r\n')) text += '\r\n';
  return Buffer.from(text, 'latin1');
}

async function expectSameBytes(input: MessageInput, baseBoundary = '0123456789abcdef'): Promise<void> {
  const built = await buildMessage({ ...input, baseBoundary });
  const expected = await reference(input, baseBoundary);
  // Compared as text first, so a failure shows where the two differ.
  expect(built.raw.toString('utf8')).toBe(expected.toString('utf8'));
  expect(built.raw.equals(expected)).toBe(true);
}

const bench = {
  fromName: 'Acme Shop',
  fromMail: 'orders@shop.example',
  to: [{ recipientName: 'Customer 7', recipientMail: 'customer7@example.com' }],
  subject: 'Order #100007 has shipped',
  text: 'Hello,\n\nyour order has shipped.\n  1 × Ceramic mug, blue (12.90 EUR)\n-- \nAcme Shop · 1 Example Street\n',
  html: '<p>Hello,</p><p>your order has <a href="https://shop.example/track">shipped</a>.</p>',
  ...fixed,
};

describe('composing a JSON submission', () => {
  it('writes the common text + HTML mail directly, the bytes MailComposer wrote', async () => {
    expect(
      composeMime({
        from: { name: bench.fromName, address: bench.fromMail },
        to: [{ name: 'Customer 7', address: 'customer7@example.com' }],
        cc: [],
        subject: bench.subject,
        text: bench.text,
        html: bench.html,
        headers: { 'X-Campaign': 'spring' },
        ...fixed,
        baseBoundary: '0123456789abcdef',
      }),
    ).toBeDefined();
    await expectSameBytes(bench);
    await expectSameBytes({ ...bench, headers: { 'X-Campaign': 'spring', 'list-unsubscribe': '<https://shop.example/u/1>' } });
  });

  it.each<[string, Partial<MessageInput>]>([
    ['text only, 7bit', { html: undefined, text: 'plain\nlines\n.\nend' }],
    ['HTML only', { text: undefined }],
    ['an empty text with HTML', { text: '' }],
    ['no body at all', { text: undefined, html: undefined }],
    ['an empty subject', { subject: '' }],
    ['a long subject with accents', { subject: 'Grüße aus Köln – ' + 'a very long subject line '.repeat(8) }],
    ['a Cyrillic body (base64)', { html: undefined, text: 'Привет, мир! Это проверка. '.repeat(30) }],
    ['a body of 3n+1 bytes in base64', { html: undefined, text: '日本語のテキスト'.repeat(13) + 'a' }],
    ['a long ASCII line (quoted-printable)', { html: undefined, text: 'word '.repeat(60) + '\n' + 'x'.repeat(300) }],
    ['trailing spaces and tabs', { html: undefined, text: 'a line with trailing space \nand tab\t\nend ' }],
    ['bare CR in the body', { html: undefined, text: 'one\rtwo\r\nthree' }],
    ['a body over 128 KiB', { html: undefined, text: 'short line\n'.repeat(13_000) }],
    [
      'names needing quotes and encoding',
      { fromName: 'Shop, "Best" \\ Co', to: [{ recipientName: 'Zoë Ünal', recipientMail: 'zoe@example.com' }] },
    ],
    [
      'upper-case domains, cc and bcc',
      { fromMail: 'Orders@SHOP.Example', cc: [{ recipientMail: 'CC@Example.ORG' }], bcc: [{ recipientMail: 'b@example.net' }] },
    ],
    [
      'many recipients (a folded To)',
      { to: Array.from({ length: 30 }, (_, i) => ({ recipientName: `Person ${i}`, recipientMail: `p${i}@example.com` })) },
    ],
    ['a unicode local part', { to: [{ recipientMail: 'jürgen@example.com' }] }],
    ['an internationalised domain', { to: [{ recipientMail: 'info@jõgeva.ee' }] }],
    ['an address with ! and =', { to: [{ recipientMail: 'a!b=c@example.com' }] }],
    [
      'Reply-To, In-Reply-To and References headers',
      { headers: { 'Reply-To': 'Help <help@example.com>', 'In-Reply-To': 'abc@x', References: '<a@x> b@y' } },
    ],
    ['header names in odd case', { headers: { 'x-smtpapi': '{"a":1}', 'x-spam-md5': 'f', 'CONTENT-LANGUAGE': 'de', 'x-empty': '  ' } }],
    ['a header value needing encoding', { headers: { 'X-Note': 'naïve café ' + 'long value '.repeat(12) } }],
  ])('%s: same bytes as MailComposer', async (_name, change) => {
    await expectSameBytes({ ...bench, ...change } as MessageInput);
  });

  it('writes the same bytes as MailComposer for generated mails', async () => {
    const noBreak = (s: string) => !/[\r\n\0]/.test(s);
    const text = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\t', '\n', '\r\n', '=', '.', 'é', '×', 'Я', '語', '😀', '-'), maxLength: 400 }),
    );
    const headerText = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 120 }), fc.string({ maxLength: 120 })).filter(noBreak);
    const local = fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{0,10}[a-z0-9]$/).filter((l) => !l.includes('..'));
    const domain = fc.constantFrom('example.com', 'Example.ORG', 'mail.example.net', 'xn--jgeva-dua.ee', 'jõgeva.ee');
    const address = fc.tuple(local, domain).map(([l, d]) => `${l}@${d}`);
    const recipient = fc.record({ recipientName: fc.option(headerText, { nil: undefined }), recipientMail: address });
    const headerName = fc.constantFrom(
      'X-Campaign',
      'x-lower',
      'X-SMTPAPI',
      'List-Unsubscribe',
      'Keywords',
      'Reply-To',
      'In-Reply-To',
      'X-Spam-MD5',
    );
    const input = fc.record(
      {
        fromName: headerText,
        fromMail: address,
        to: fc.array(recipient, { minLength: 1, maxLength: 4 }),
        cc: fc.array(recipient, { maxLength: 3 }),
        bcc: fc.array(recipient, { maxLength: 2 }),
        subject: headerText,
        text,
        html: text,
        headers: fc.dictionary(headerName, headerText, { maxKeys: 3 }),
      },
      { requiredKeys: ['fromMail', 'to', 'subject'] },
    );
    const boundary = fc.stringMatching(/^[0-9a-f]{16}$/);
    await fc.assert(
      fc.asyncProperty(input, boundary, async (generated, baseBoundary) => {
        await expectSameBytes({ ...generated, ...fixed } as MessageInput, baseBoundary);
      }),
      { numRuns: 400 },
    );
  });
});
