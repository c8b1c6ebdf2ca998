/**
 * The mail every benchmark submits: a realistic small transactional message (one recipient, a subject, a
 * ~1 KB text body and a short HTML body), distinct per index so nothing is deduplicated or cached.
 */
import type { SubmitMailRequest } from '@outbox/contract';
import type { ApiKeyPrincipal } from '../../server/src/auth/auth.service.js';
import type { SubmissionService } from '../../server/src/submission/submission.service.js';

const TEXT = `Hello,

your order has shipped and is on its way. You can follow the parcel with the link below; it usually
arrives within two to three working days. If anything is wrong with the order, answer this message and
our support team will get back to you within one working day.

Items:
  1 × Ceramic mug, blue (12.90 EUR)
  2 × Espresso cups, set of 4 (24.00 EUR)
  1 × Gift wrapping (3.50 EUR)

Total: 64.40 EUR, paid by card ending in 4242.

Thank you for shopping with us!
-- 
Acme Shop · 1 Example Street · 12345 Example City
`;

const HTML =
  '<p>Hello,</p><p>your order has shipped and is on its way.</p><p><a href="https://shop.example/track">Track the parcel</a></p>';

export function benchMail(index: number, overrides: Partial<SubmitMailRequest> = {}): SubmitMailRequest {
  return {
    fromName: 'Acme Shop',
    fromMail: 'orders@shop.example',
    to: [{ recipientName: `Customer ${index}`, recipientMail: `customer${index}@example.com` }],
    subject: `Order #${100000 + index} has shipped`,
    text: TEXT,
    html: HTML,
    ...overrides,
  };
}

/** The same mail as raw RFC 5322 bytes, for the raw nodemailer loop and SMTP intake. */
export function benchRawMessage(index: number): { envelope: { from: string; to: string[] }; raw: string } {
  const to = `customer${index}@example.com`;
  const raw = [
    'From: Acme Shop <orders@shop.example>',
    `To: Customer ${index} <${to}>`,
    `Subject: Order #${100000 + index} has shipped`,
    `Message-ID: <bench-${index}-${process.pid}@shop.example>`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    TEXT.replace(/\n/g, '\r\n'),
  ].join('\r\n');
  return { envelope: { from: 'orders@shop.example', to: [to] }, raw };
}

/** How many mails one submission call carries when a benchmark fills a queue. */
export const QUEUE_BATCH = 500;

/**
 * Queues `count` mails (`mailAt(i)`: benchMail unless said) through the submission service, QUEUE_BATCH a call, as
 * POST /api/v1/mail with an array writes them: the real writer, with its checks and counters. `onBatch` hears how
 * many are queued after each call.
 */
export async function queueMails(
  submissions: Pick<SubmissionService, 'submitJson'>,
  principal: ApiKeyPrincipal,
  count: number,
  { mailAt = benchMail, onBatch }: { mailAt?: (index: number) => SubmitMailRequest; onBatch?: (queued: number) => void } = {},
): Promise<void> {
  for (let start = 0; start < count; start += QUEUE_BATCH) {
    const batch = Array.from({ length: Math.min(QUEUE_BATCH, count - start) }, (_, i) => mailAt(start + i));
    await submissions.submitJson(principal, batch, true);
    onBatch?.(start + batch.length);
  }
}
