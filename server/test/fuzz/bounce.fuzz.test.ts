/**
 * Property-based fuzzing of the bounce listener (docs/bounces.md), the whole service running on the engine under
 * test with BOUNCE_DOMAIN set, over a raw socket: sessions to real return paths (as the relay saw them), forged
 * and hostile ones, carrying delivery reports and complaints whose every field may be hostile (diagnostics up to
 * 200 KB, odd statuses and actions, many recipient blocks, broken MIME), or no report at all. The property: every
 * command gets a reply; none is the listener's internal-failure answer (451 4.3.0); the listener still greets
 * afterwards; and what it stored stays within the documented caps (raw report ≤ 64 KiB, a diagnostic ≤ 1 KiB
 * plus its marker, at most one report row per 250 answer).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MailStatus } from '@outbox/contract';
import { arf, dsn, startBounceOutbox, type BounceOutbox } from '../bounces/bounce-support.js';
import { SmtpSession } from '../support/smtp-session.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { fuzzParameters, fuzzTimeoutMs, hostileText, SessionLog } from './fuzz-support.js';

let relay: TestRelay;
let outbox: BounceOutbox;
/** The envelope senders the relay saw: real return paths. */
let returnPaths: string[] = [];
const log = new SessionLog();
let accepted = 0;

beforeAll(async () => {
  relay = await startTestRelay();
  outbox = await startBounceOutbox({ RELAY_URL: relay.url });
  const ids = [await outbox.submit(['ann@example.net', 'bob@example.net']), await outbox.submit(['carol@example.net'])];
  for (const id of ids) await outbox.waitForStatus(id, MailStatus.ProviderSent);
  returnPaths = [...new Set(relay.received.map((m) => m.mailFrom))];
}, 60_000);

afterAll(async () => {
  console.log(`Bounce fuzz: ${log.summary()}`);
  await outbox?.stop();
  await relay?.close();
});

const latin1 = (text: string) => Buffer.from(text.replace(/[\r\n]/g, ' '), 'utf8').toString('latin1');

const recipientAddress = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('ann@example.net', 'bob@example.net', 'carol@example.net') },
  { weight: 1, arbitrary: hostileText.map(latin1) },
);

const field = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('failed', 'delayed', 'delivered', 'relayed', 'expanded', '5.1.1', '4.4.1', '2.0.0', '5.7.1') },
  { weight: 1, arbitrary: hostileText.map(latin1) },
);

const diagnostic = fc.oneof(
  { weight: 3, arbitrary: fc.constant('550 5.1.1 User unknown') },
  { weight: 1, arbitrary: hostileText.map(latin1) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 200_000 }).map((n) => `550 ${'x'.repeat(n)}`) },
);

const returnPath = () =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...returnPaths) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...returnPaths).map((path) => path.replace(/[a-z2-7](?=@)/, (c) => (c === 'a' ? 'b' : 'a'))),
    },
    { weight: 1, arbitrary: fc.constantFrom('b-999999-aaaaaaaaaa@bounce.test', 'postmaster@bounce.test', 'someone@elsewhere.test') },
    { weight: 1, arbitrary: hostileText.map(latin1) },
  );

const report = (to: string) =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .array(fc.record({ address: recipientAddress, action: field, status: field, diagnostic }), { minLength: 1, maxLength: 4 })
        .chain((recipients) =>
          fc.oneof(
            fc.constant(dsn({ returnPath: to, recipients })),
            // Many blocks: the parser keeps a bounded number.
            fc.constant(dsn({ returnPath: to, recipients: Array.from({ length: 150 }, () => recipients[0]!) })),
          ),
        ),
    },
    { weight: 2, arbitrary: recipientAddress.map((recipient) => arf({ returnPath: to, recipient })) },
    {
      weight: 1,
      arbitrary: fc
        .array(
          fc.oneof(
            fc.constantFrom(
              'Content-Type: multipart/report; report-type=delivery-status; boundary="R"\r\n\r\n',
              '--R\r\nContent-Type: message/delivery-status\r\n\r\n',
              'Final-Recipient: rfc822; ann@example.net\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n',
              '--R--\r\n',
              '\r\n.\r\n',
              'Content-Transfer-Encoding: base64\r\n\r\n====\r\n',
            ),
            hostileText.map((t) => `${latin1(t)}\r\n`),
          ),
          { maxLength: 10 },
        )
        .map((pieces) => pieces.join('')),
    },
  );

const dotStuff = (data: string) => data.replace(/(^|\r\n)\./g, '$1..');

describe('bounce listener fuzz', () => {
  it(
    'random reports to real, forged and hostile return paths: every command answered, no internal failure, the listener still greets',
    async () => {
      const session = fc
        .record({ to: returnPath(), from: fc.oneof(fc.constant(''), fc.constant('mailer-daemon@mx.test'), hostileText.map(latin1)) })
        .chain(({ to, from }) => fc.record({ to: fc.constant(to), from: fc.constant(from), body: report(to) }));
      await fc.assert(
        fc.asyncProperty(session, async ({ to, from, body }) => {
          log.sessions++;
          const client = await SmtpSession.open(outbox.bouncePort);
          const transcript: string[] = [];
          const ask = async (line: string | undefined, what: string, timeoutMs = 10_000) => {
            if (line !== undefined) {
              transcript.push(`C: ${line.slice(0, 120)}`);
              client.write(`${line}\r\n`);
            }
            const answer = await client.nextReply(timeoutMs);
            transcript.push(`S: ${answer ?? '(nothing)'}`);
            if (answer === undefined) log.note(`no reply to ${what}`, transcript.join(' | '));
            else {
              log.countReply(answer);
              if (/^451 4\.3\.0/.test(answer)) log.note(`internal failure (451 4.3.0) after ${what}`, transcript.join(' | '));
            }
            return answer;
          };
          try {
            if (!(await ask(undefined, 'the greeting'))?.startsWith('220')) return false;
            await ask('EHLO reporter.test', 'EHLO');
            await ask(`MAIL FROM:<${from}>`, 'MAIL FROM');
            const rcpt = await ask(`RCPT TO:<${to}>`, 'RCPT TO');
            if (rcpt?.startsWith('250') && (await ask('DATA', 'DATA'))?.startsWith('354')) {
              transcript.push(`C: <report> ${JSON.stringify(body.slice(0, 200))}`);
              client.write(`${dotStuff(body)}${body.endsWith('\r\n') ? '' : '\r\n'}.\r\n`);
              if ((await ask(undefined, 'the report', 30_000))?.startsWith('250')) accepted++;
            }
            await ask('QUIT', 'QUIT');
          } finally {
            client.destroy();
          }
          const probe = await SmtpSession.open(outbox.bouncePort);
          const greeting = await probe.nextReply(10_000);
          probe.destroy();
          return greeting?.startsWith('220') === true;
        }),
        fuzzParameters(30),
      );
      // The sessions' own checks (every command answered, no internal failure), noted above rather than thrown,
      // so that one run names every kind of problem it met.
      expect(log.sessions).toBeGreaterThan(0);
      expect(log.problems.size, log.report()).toBe(0);
    },
    fuzzTimeoutMs,
  );

  it('what the sessions stored stays within the caps', async () => {
    expect(log.sessions).toBeGreaterThan(0);
    const rows = await outbox.running.store.db.selectFrom('bounce_reports').select(['raw', 'summary']).execute();
    expect(rows.length).toBeLessThanOrEqual(accepted);
    for (const row of rows) {
      expect(row.raw.length).toBeLessThanOrEqual(64 * 1024);
      const summary = JSON.parse(row.summary) as { recipients?: Array<{ diagnostic?: string | null }> };
      for (const recipient of summary.recipients ?? [])
        expect(Buffer.byteLength(recipient.diagnostic ?? '')).toBeLessThanOrEqual(1024 + 64);
    }
    const replies = await outbox.running.store.db.selectFrom('mail_recipients').select('reply').execute();
    for (const { reply } of replies) expect(Buffer.byteLength(reply ?? '')).toBeLessThanOrEqual(2048);
  });
});
