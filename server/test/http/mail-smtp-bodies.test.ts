/**
 * An SMTP mail stores no copy of its bodies (submission-preparation.ts): the detail parses them from the stored
 * bytes when the mail is opened. This proves the detail answers what it answered when intake stored the bodies:
 * the reference is the old storage rule (simpleParser over the raw bytes, `skipImageLinks`, `skipTextToHtml`,
 * text and html taken as they came), kept here. A mail stored by the old rule (bodies in its row) still shows
 * them.
 */
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, getMailDetail, loginAs, type TestContext } from '../support/context.js';
import { startSmtpIntake, type SmtpIntake } from '../support/smtp-intake.js';

let context: TestContext;
let smtp: SmtpIntake;
let apiKey: string;
let token: string;

beforeAll(async () => {
  context = await createTestContext();
  token = await loginAs(context);
  smtp = await startSmtpIntake(context, 'bodies');
  apiKey = smtp.apiKey;
});

afterAll(async () => {
  await smtp?.close();
  await context?.close();
});

const detailOf = (id: number) => getMailDetail(context, token, id);

async function contentOf(id: number) {
  return context.store.db
    .selectFrom('mail_contents')
    .select(['raw', 'text_body', 'html_body'])
    .where('mail_id', '=', id)
    .executeTakeFirstOrThrow();
}

/** What intake stored as the bodies before this change, from the same bytes. */
async function bodiesAsStoredBefore(raw: Buffer) {
  const parsed = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true });
  return { text: parsed.text ?? null, html: typeof parsed.html === 'string' ? parsed.html : null };
}

/** A detail as the old rule made it: the same answer, with the bodies read from the row. */
async function assertSameAsBefore(id: number) {
  const content = await contentOf(id);
  expect(content.text_body).toBeNull();
  expect(content.html_body).toBeNull();
  const now = await detailOf(id);
  const before = await bodiesAsStoredBefore(content.raw!);
  expect({ text: now.text, html: now.html }).toEqual(before);

  // The same mail as a row written before the change: bodies in the row, the detail shows them, and the rest
  // of the answer (headers, attachments, recipients, events) is identical.
  await context.store.db
    .updateTable('mail_contents')
    .set({ text_body: before.text, html_body: before.html })
    .where('mail_id', '=', id)
    .execute();
  expect(await detailOf(id)).toEqual(now);
  return now;
}

describe('GET /api/v1/mail/{id}: the bodies of an SMTP mail', () => {
  it('a multipart mail with an encoded subject, a text part, an HTML part and an attachment', async () => {
    const id = await smtp.send({
      from: '"Zoë Shop" <shop@example.com>',
      to: '"Ann Ärger" <ann@example.com>',
      cc: 'Team: bob@example.com, carol@example.com;',
      subject: 'Ihre Rechnung — Größe ✓',
      text: 'Hallo Ann,\nsiehe Anhang. Grüße\n',
      html: '<p>Hallo <b>Ann</b>, siehe <a href="https://shop.example/x">Anhang</a>. Grüße</p>',
      attachments: [{ filename: 'rechnung-42.pdf', content: Buffer.alloc(3_000, 5), contentType: 'application/pdf' }],
    });
    const content = await contentOf(id);
    // The subject went over the wire as encoded words, so the header decoding at intake is exercised.
    expect(content.raw!.toString('latin1')).toMatch(/^Subject: =\?UTF-8\?/m);
    const mail = await assertSameAsBefore(id);
    expect(mail.subject).toBe('Ihre Rechnung — Größe ✓');
    expect(mail.fromName).toBe('Zoë Shop');
    expect(mail.to).toEqual([{ recipientName: 'Ann Ärger', recipientMail: 'ann@example.com' }]);
    // A group's members are not listed as Cc, as before (mailparser gives the group, not its members).
    expect(mail.cc).toEqual([]);
    expect(mail.text).toBe('Hallo Ann,\nsiehe Anhang. Grüße\n');
    expect(mail.html).toBe('<p>Hallo <b>Ann</b>, siehe <a href="https://shop.example/x">Anhang</a>. Grüße</p>');
    expect(mail.attachments).toEqual([
      { filename: 'rechnung-42.pdf', contentType: 'application/pdf', size: 3_000, disposition: 'attachment' },
    ]);
    expect(mail.headers.find((h) => h.name === 'Subject')?.value).toMatch(/^=\?UTF-8\?/);
  });

  it('a plain-text mail', async () => {
    const id = await smtp.send({ from: 'shop@example.com', to: 'ann@example.com', subject: 'Plain', text: 'No files.\r\nTwo lines.' });
    const mail = await assertSameAsBefore(id);
    expect(mail.text).toBe('No files.\nTwo lines.\n');
    expect(mail.html).toBeNull();
    expect(mail.attachments).toEqual([]);
  });

  it('an HTML-only mail gets its text from the HTML, as intake made it before', async () => {
    const id = await smtp.send({
      from: 'shop@example.com',
      to: 'ann@example.com',
      subject: 'Html',
      html: '<h1>Sale</h1><p>Now on.</p>',
    });
    const mail = await assertSameAsBefore(id);
    expect(mail.html).toBe('<h1>Sale</h1><p>Now on.</p>\n');
    expect(mail.text).toContain('Now on.');
  });

  it('a mail without a body, and a raw one with a quoted-printable latin-1 body', async () => {
    const empty = await smtp.send({
      envelope: { from: 'shop@example.com', to: ['ann@example.com'] },
      raw: 'From: shop@example.com\r\nTo: ann@example.com\r\nSubject: Empty\r\n\r\n',
    });
    expect((await assertSameAsBefore(empty)).text).toBeNull();
    const latin = await smtp.send({
      envelope: { from: 'shop@example.com', to: ['ann@example.com'] },
      raw: [
        'From: =?iso-8859-1?q?J=FCrgen?= <j@example.com>',
        'To: ann@example.com',
        'Subject: =?iso-8859-1?q?=C4pfel?=',
        'MIME-Version: 1.0',
        'Content-Type: text/plain; charset=iso-8859-1',
        'Content-Transfer-Encoding: quoted-printable',
        '',
        'K=E4se und =C4pfel',
        '',
      ].join('\r\n'),
    });
    const mail = await assertSameAsBefore(latin);
    expect(mail.subject).toBe('Äpfel');
    expect(mail.fromName).toBe('Jürgen');
    expect(mail.text).toBe('Käse und Äpfel\n');
  });

  it('a JSON mail keeps the bodies it was given', async () => {
    const submitted = await context.app.inject({
      method: 'POST',
      url: '/api/v1/mail',
      headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/json' },
      payload: { fromMail: 'shop@example.com', to: [{ recipientMail: 'bob@example.com' }], subject: 'JSON', text: 't', html: '<p>h</p>' },
    });
    expect(submitted.statusCode, submitted.body).toBe(202);
    const id = (submitted.json() as { data: Array<{ id: number }> }).data[0]!.id;
    expect(await contentOf(id)).toMatchObject({ text_body: 't', html_body: '<p>h</p>' });
    expect(await detailOf(id)).toMatchObject({ text: 't', html: '<p>h</p>' });
  });
});
