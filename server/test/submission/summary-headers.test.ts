/**
 * readSummaryHeaders (submission-preparation.ts) reads From, To, Cc and Subject from the header block alone.
 * The reference is what intake used before: simpleParser over the whole message. Both must agree on every
 * header shape: encoded words (B and Q, several charsets, broken ones), address groups, repeated fields,
 * folding, raw 8-bit UTF-8, punycode domains, encoded words inside addresses, missing fields, and messages
 * without an empty line or with a header block too large for the fast path.
 */
import fc from 'fast-check';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { readSummaryHeaders } from '../../src/submission/submission-preparation.js';

async function reference(raw: Buffer) {
  const parsed = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true });
  return { from: parsed.from, to: parsed.to, cc: parsed.cc, subject: parsed.subject };
}

async function expectSame(raw: Buffer) {
  expect(await readSummaryHeaders(raw)).toEqual(await reference(raw));
}

const message = (headers: string[], body = 'Body line.\r\n') => Buffer.from([...headers, '', body].join('\r\n'), 'utf8');

const CASES: Array<[string, string[]]> = [
  ['plain', ['From: Shop <shop@example.com>', 'To: Ann <ann@example.com>', 'Subject: Hello']],
  [
    'encoded words B and Q',
    [
      'From: =?UTF-8?B?Wm/DqyBTaG9w?= <shop@example.com>',
      'To: =?iso-8859-1?q?J=FCrgen?= <j@example.com>',
      'Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?= und =?UTF-8?B?4pyT?=',
    ],
  ],
  ['broken encoded words', ['From: =?UTF-8?B?@@@?= <a@example.com>', 'Subject: =?x-unknown?Q?abc?= =?UTF-8?Q?=ZZ?=']],
  [
    'groups',
    ['From: a@example.com', 'To: Team: bob@example.com, Carol <carol@example.com>;, dave@example.com', 'Cc: undisclosed-recipients:;'],
  ],
  ['group as From', ['From: Sales: s1@example.com, s2@example.com;', 'To: x@example.com']],
  [
    'repeated fields',
    [
      'From: first@example.com',
      'From: second@example.com',
      'To: a@example.com',
      'To: b@example.com, c@example.com',
      'Cc: c1@example.com',
      'CC: c2@example.com',
      'Subject: one',
      'Subject: two',
    ],
  ],
  ['folded', ['From: Shop', ' <shop@example.com>', 'To: a@example.com,', '\tb@example.com', 'Subject: a long', '  folded subject']],
  ['raw 8-bit', ['From: Zoë <zoe@example.com>', 'To: Ärger <a@example.com>', 'Subject: Größe ✓']],
  [
    'punycode and encoded address',
    ['From: x@xn--mnchen-3ya.de', 'To: =?UTF-8?Q?ceo=40bank.com?= <=?UTF-8?Q?a=40b.c?=>', 'Cc: "Q" <=?UTF-8?Q?x?=@example.com>'],
  ],
  ['missing fields', ['Date: Thu, 01 Jan 2026 00:00:00 +0000']],
  ['empty values', ['From:', 'To: ', 'Cc:', 'Subject:']],
  ['odd names and case', ['fROM : "Quoted, Name" <q@example.com>', 'to:a@example.com(comment)', 'SUBJECT:   spaced   ']],
  ['no addresses', ['From: just a name', 'To: <>', 'Cc: @', 'Subject: x']],
  ['mbox line first', ['From sender@example.com Thu Jan  1 00:00:00 2026', 'From: s@example.com', 'Subject: mbox']],
];

describe('readSummaryHeaders: as simpleParser reads the whole message', () => {
  it.each(CASES)('%s', async (_name, headers) => {
    await expectSame(message(headers));
  });

  it('multipart bodies do not matter', async () => {
    await expectSame(
      message(
        [
          'From: a@example.com',
          'To: b@example.com',
          'Subject: parts',
          'MIME-Version: 1.0',
          'Content-Type: multipart/alternative; boundary="b"',
        ],
        '--b\r\nContent-Type: text/plain\r\nSubject: inner\r\n\r\nt\r\n--b--\r\n',
      ),
    );
  });

  it('no empty line, a header block past the fast path, one that starts empty', async () => {
    await expectSame(Buffer.from('From: a@example.com\r\nTo: b@example.com\r\nSubject: all header\r\n'));
    const many = Array.from({ length: 2_000 }, (_, i) => `X-Filler-${i}: ${'v'.repeat(20)}`);
    await expectSame(message(['From: a@example.com', ...many, 'To: b@example.com', 'Subject: big']));
    await expectSame(Buffer.from('\r\nFrom: a@example.com\r\nSubject: after empty\r\n\r\nbody\r\n'));
  });

  it('generated header blocks', async () => {
    const word = fc.constantFrom(
      'Ann',
      'Zoë',
      '=?UTF-8?B?WsO2?=',
      '=?iso-8859-1?q?J=FCrgen?=',
      '"Quoted, Name"',
      '(c)',
      'Team:',
      ';',
      ',',
      '<',
      '>',
      '@',
      'x@example.com',
      '<y@example.com>',
      ' ',
      '\t',
      'ß✓',
      '=?',
      '?=',
    );
    const value = fc.array(word, { maxLength: 8 }).map((words) => words.join(' '));
    const name = fc.constantFrom('From', 'To', 'Cc', 'Subject', 'cc', 'TO', 'X-Other', 'Bcc', 'Reply-To');
    const field = fc.tuple(name, value, fc.boolean()).map(([n, v, fold]) => `${n}: ${fold ? v.replace(' ', '\r\n ') : v}`);
    await fc.assert(
      fc.asyncProperty(fc.array(field, { maxLength: 10 }), async (fields) => {
        const raw = message(['Message-ID: <m@example.com>', ...fields]);
        expect(await readSummaryHeaders(raw)).toEqual(await reference(raw));
      }),
      { numRuns: 300, seed: 20261123 },
    );
  });
});
