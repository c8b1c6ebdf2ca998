/**
 * The detail lists a message's attachments by name, type and decoded size, parsed from the stored bytes. JSON
 * submissions carry no attachments (docs/api.md), so the mail arrives over SMTP through the real listener.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, createTestContext, getMailDetail, loginAs, type TestContext } from '../support/context.js';
import { startSmtpIntake, type SmtpIntake } from '../support/smtp-intake.js';

let context: TestContext;
let smtp: SmtpIntake;
let apiKey: string;
let token: string;

beforeAll(async () => {
  context = await createTestContext();
  token = await loginAs(context);
  smtp = await startSmtpIntake(context, 'attachments');
  apiKey = smtp.apiKey;
});

afterAll(async () => {
  await smtp?.close();
  await context?.close();
});

const detailOf = (id: number) => getMailDetail(context, token, id);

describe('GET /api/v1/mail/{id}: attachments', () => {
  it('lists each attachment with its file name, content type and decoded size, inline parts marked inline', async () => {
    const pdf = Buffer.alloc(10_000, 7); // base64 in the message (13,5xx bytes); the detail says 10,000
    const id = await smtp.send({
      from: 'Shop <shop@example.com>',
      to: 'ann@example.com',
      subject: 'Your invoice',
      text: 'See attached.',
      html: '<p>Logo: <img src="cid:logo@shop"></p>',
      attachments: [
        { filename: 'invoice-42.pdf', content: pdf, contentType: 'application/pdf' },
        { filename: 'notes.txt', content: 'héllo\n', contentType: 'text/plain; charset=utf-8' },
        { filename: 'logo.png', content: Buffer.from([137, 80, 78, 71, 1, 2, 3]), contentType: 'image/png', cid: 'logo@shop' },
      ],
    });
    const mail = await detailOf(id);
    expect(mail.subject).toBe('Your invoice');
    // In the message's order: nodemailer puts the inline image (multipart/related) before the files.
    expect(mail.attachments).toEqual([
      { filename: 'logo.png', contentType: 'image/png', size: 7, disposition: 'inline' },
      { filename: 'invoice-42.pdf', contentType: 'application/pdf', size: 10_000, disposition: 'attachment' },
      { filename: 'notes.txt', contentType: 'text/plain', size: Buffer.byteLength('héllo\n'), disposition: 'attachment' },
    ]);
    // The headers are still the message's own, and the raw download still holds the attachment's bytes.
    expect(mail.headers.find((h) => h.name === 'Subject')?.value).toBe('Your invoice');
    const raw = await context.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/raw`, headers: auth(token) });
    expect(raw.body).toContain('filename=invoice-42.pdf');
  });

  it('a message without attachments lists none, and a JSON submission too', async () => {
    const id = await smtp.send({ from: 'shop@example.com', to: 'ann@example.com', subject: 'Plain', text: 'No files.' });
    expect((await detailOf(id)).attachments).toEqual([]);
    const submitted = await context.app.inject({
      method: 'POST',
      url: '/api/v1/mail',
      headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/json' },
      payload: {
        fromName: 'Shop',
        fromMail: 'shop@example.com',
        to: [{ recipientName: 'Bob', recipientMail: 'bob@example.com' }],
        subject: 'JSON',
        text: 't',
        html: '<p>h</p>',
      },
    });
    expect(submitted.statusCode, submitted.body).toBe(202);
    const jsonId = (submitted.json() as { data: Array<{ id: number }> }).data[0]!.id;
    expect((await detailOf(jsonId)).attachments).toEqual([]);
  });
});
