/**
 * Bounces from the outside (docs/bounces.md): Outbox started as `npm start` starts it with
 * BOUNCE_DOMAIN and BOUNCE_SMTP_PORT delivers to a real relay with its return path, and real SMTP clients hand
 * hand-made reports to the bounce listener: a hard bounce, a partial one, a delayed one, a complaint, a forged
 * return path, an unmatched report, one too large, a malformed one. One Outbox for the file: each test uses
 * mails of its own.
 */
import { MailStatus } from '@outbox/contract';
import type { BounceReport, BouncesResponse } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBounceService } from '../../src/bounces/bounce.service.js';
import { ensureServerSecret } from '../../src/bounces/bounce.repository.js';
import { legacyReturnPath } from '../../src/bounces/return-path.js';
import { suppressedAmong } from '../../src/suppression/suppression.repository.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { waitUntil } from '../support/net.js';
import { arf, BOUNCE_DOMAIN, dsn, sendSmtp, startBounceOutbox, type BounceOutbox } from './bounce-support.js';

let relay: TestRelay;
let outbox: BounceOutbox;

beforeAll(async () => {
  relay = await startTestRelay();
  outbox = await startBounceOutbox({ RELAY_URL: relay.url });
});

afterAll(async () => {
  await outbox?.stop();
  await relay?.close();
});

async function sentMail(to: string[]): Promise<number> {
  const id = await outbox.submit(to);
  await outbox.waitForStatus(id, MailStatus.ProviderSent, `mail ${id} ProviderSent`);
  return id;
}

async function getJson<T>(url: string): Promise<{ status: number; body: T }> {
  const response = await outbox.running.app.inject({ method: 'GET', url, headers: { authorization: `Token ${outbox.token}` } });
  return { status: response.statusCode, body: response.json() as T };
}

const suppressed = async (address: string) => (await suppressedAmong(outbox.running.store.db, [address], Date.now())).get(address);

describe('the return path', () => {
  it('every delivery uses b-<mailId>-<recipient>-<hmac>@BOUNCE_DOMAIN as envelope sender; the From header stays the application’s', async () => {
    const id = await sentMail(['ann@example.net']);
    const relayed = relay.received.find((m) => m.raw.toString().includes(`Subject: Your order`) && m.rcptTo.includes('ann@example.net'))!;
    expect(relayed.mailFrom).toMatch(new RegExp(`^b-${id}-0-[a-z2-7]{10}@bounce\\.test$`));
    expect(relayed.mailFrom).toBe(await outbox.returnPathOf(id));
    expect(relayed.raw.toString()).toMatch(/^From: Shop <shop@example\.com>\r$/m);
  });

  it('the process running the listener says so in its heartbeat: role bounce', async () => {
    const answer = await getJson<{ data: Array<{ id: string; roles: string[] }> }>('/api/v1/instances');
    expect(answer.body.data.find((i) => i.id === outbox.running.heartbeat.id)?.roles).toEqual(['api', 'worker', 'bounce']);
  });

  it('the secret is created once, race-free: concurrent first uses on one store all get the same one', async () => {
    const db = outbox.running.store.db;
    const values = await Promise.all(['a', 'b', 'c'].map((candidate) => ensureServerSecret(db, 'test-race', candidate, Date.now())));
    expect(new Set(values).size).toBe(1);
    // A second service on the same store (another instance) computes the same return paths.
    const other = createBounceService({ store: outbox.running.store, clock: { now: () => Date.now() }, bounceDomain: BOUNCE_DOMAIN });
    expect((await other.returnPaths())!.addressOf(42, 0)).toBe(await outbox.returnPathOf(42));
  });
});

describe('one return path per recipient', () => {
  it('a mail to three recipients goes out as three envelopes, each from its recipient’s own return path, same bytes', async () => {
    const id = await sentMail(['one@example.net', 'two@example.net', 'three@example.net']);
    const messageId = (await outbox.detail(id)).messageId;
    const copies = relay.received.filter((m) => m.messageId === messageId);
    expect(copies.map((m) => m.rcptTo)).toEqual(expect.arrayContaining([['one@example.net'], ['two@example.net'], ['three@example.net']]));
    expect(copies).toHaveLength(3);
    for (const [place, address] of ['one@example.net', 'two@example.net', 'three@example.net'].entries())
      expect(copies.find((m) => m.rcptTo[0] === address)!.mailFrom).toBe(await outbox.returnPathOf(id, place));
    expect(new Set(copies.map((m) => m.raw.toString('latin1'))).size).toBe(1);
    const outcomes = (await outbox.detail(id)).recipients!.filter((r) => r.kind === 'to').map((r) => r.outcome);
    expect(outcomes).toEqual(['accepted', 'accepted', 'accepted']);
  });

  it('a recipient cannot bounce or complain for another: a report to B’s return path naming A changes nothing for A', async () => {
    const id = await sentMail(['alice-v@example.net', 'bob-v@example.net']);
    const bobs = await outbox.returnPathOf(id, 1);
    const outcomes = () =>
      outbox
        .detail(id)
        .then((d) => Object.fromEntries(d.recipients!.filter((r) => r.kind === 'to').map((r) => [r.recipientMail, r.outcome])));
    const forgedBounce = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [bobs],
      raw: dsn({
        returnPath: bobs,
        recipients: [
          { address: 'alice-v@example.net', action: 'failed', status: '5.1.1' },
          { address: 'carol-v@example.net', action: 'delayed', status: '4.4.1' },
        ],
      }),
    });
    expect(forgedBounce.last).toMatch(/^250 /);
    expect(await outcomes()).toEqual({ 'alice-v@example.net': 'accepted', 'bob-v@example.net': 'accepted' });
    // Entries about others change nothing, not even a delayed event.
    expect((await outbox.detail(id)).events.map((e) => e.type)).not.toContain('bounce-delayed');

    // A complaint that came back through Bob's copy is about Bob's copy, whoever it names: Alice stays untouched.
    const forgedComplaint = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [bobs],
      raw: arf({ returnPath: bobs, recipient: 'alice-v@example.net' }),
    });
    expect(forgedComplaint.last).toMatch(/^250 /);
    expect(await outcomes()).toEqual({ 'alice-v@example.net': 'accepted', 'bob-v@example.net': 'complained' });
    expect(await suppressed('alice-v@example.net')).toBeUndefined();
    expect(await suppressed('bob-v@example.net')).toMatchObject({ reason: 'complaint' });
  });

  it('the per-mail return path of earlier releases still works for a one-recipient mail, and moves nobody on a mail with several', async () => {
    const secret = (
      await outbox.running.store.db.selectFrom('server_secrets').select('value').where('name', '=', 'return-path').executeTakeFirstOrThrow()
    ).value;
    const single = await sentMail(['legacy-one@example.net']);
    const singlePath = legacyReturnPath(secret, BOUNCE_DOMAIN, single);
    const first = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [singlePath],
      raw: dsn({ returnPath: singlePath, recipients: [{ address: 'legacy-one@example.net', action: 'failed', status: '5.1.1' }] }),
    });
    expect(first.last).toMatch(/^250 /);
    expect((await outbox.detail(single)).status).toBe(MailStatus.ProviderError);

    const several = await sentMail(['legacy-a@example.net', 'legacy-b@example.net']);
    const severalPath = legacyReturnPath(secret, BOUNCE_DOMAIN, several);
    const second = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [severalPath],
      raw: dsn({ returnPath: severalPath, recipients: [{ address: 'legacy-a@example.net', action: 'failed', status: '5.1.1' }] }),
    });
    expect(second.last).toMatch(/^250 /);
    const detail = await outbox.detail(several);
    expect(detail.status).toBe(MailStatus.ProviderSent);
    expect(detail.recipients!.filter((r) => r.kind === 'to').map((r) => r.outcome)).toEqual(['accepted', 'accepted']);
    expect(await suppressed('legacy-a@example.net')).toBeUndefined();
  });
});

describe('reports handed to the bounce listener', () => {
  it('a hard bounce (5.1.1, failed) of the only recipient: ProviderError, recipient bounced with the diagnostic, address suppressed', async () => {
    const id = await sentMail(['gone@example.net']);
    const returnPath = await outbox.returnPathOf(id);
    const diagnostic = '550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown';
    const answer = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [returnPath],
      raw: dsn({ returnPath, recipients: [{ address: 'gone@example.net', action: 'failed', status: '5.1.1', diagnostic }] }),
    });
    expect(answer.last).toMatch(/^250 /);

    const detail = await outbox.detail(id);
    expect(detail.status).toBe(MailStatus.ProviderError);
    expect(detail.rejectedRecipients).toBe(1);
    const recipient = detail.recipients!.find((r) => r.kind === 'to' || r.kind === 'envelope')!;
    expect(recipient.outcome).toBe('bounced');
    expect(recipient.reply).toContain(diagnostic);
    expect(detail.events.map((e) => e.type)).toContain('bounced');
    const row = await suppressed('gone@example.net');
    expect(row).toMatchObject({ reason: 'hard_bounce', mail_id: id, created_by: 'bounce' });
    const events = await outbox.running.store.db
      .selectFrom('application_events')
      .selectAll()
      .where('mail_id', '=', id)
      .orderBy('mail_seq')
      .execute();
    // mail.queued and mail.sent came with its submission and delivery; the report adds one event.
    expect(events.map((e) => e.type)).toEqual(['mail.queued', 'mail.sent', 'mail.bounced']);
    // Its data has every mail event's fields (docs/webhooks.md#events), its sequence the next of the mail's.
    expect(JSON.parse(events[2]!.payload)).toMatchObject({
      mailId: id,
      sequence: 3,
      status: 'ProviderError',
      recipients: ['gone@example.net'],
      reportId: expect.any(Number),
      bounced: [{ address: 'gone@example.net', reply: expect.stringContaining(diagnostic) }],
      outcomes: [{ address: 'gone@example.net', outcome: 'bounced', reply: expect.stringContaining(diagnostic) }],
    });

    const list = await getJson<BouncesResponse>('/api/v1/bounces?matched=true&limit=50');
    const report = list.body.data.find((r) => r.mailId === id)!;
    expect(report).toMatchObject({ kind: 'dsn', matchedBy: 'return-path', envelopeFrom: '', envelopeTo: returnPath });
    expect(report.summary.applied).toEqual([{ recipient: 'gone@example.net', outcome: 'bounced' }]);
    // The mail's detail carries its reports.
    expect((await outbox.detail(id)).bounces).toEqual([report]);
  });

  it('a partial bounce (one of two recipients): the mail stays ProviderSent, one recipient bounced and counted', async () => {
    const id = await sentMail(['keep@example.net', 'lost@example.net']);
    const returnPath = await outbox.returnPathOf(id, 1);
    const answer = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [returnPath],
      raw: dsn({
        returnPath,
        recipients: [{ address: 'lost@example.net', action: 'failed', status: '5.2.1', diagnostic: '550 5.2.1 mailbox disabled' }],
      }),
    });
    expect(answer.last).toMatch(/^250 /);
    const detail = await outbox.detail(id);
    expect(detail.status).toBe(MailStatus.ProviderSent);
    expect(detail.rejectedRecipients).toBe(1);
    const outcomes = Object.fromEntries(detail.recipients!.filter((r) => r.kind === 'to').map((r) => [r.recipientMail, r.outcome]));
    expect(outcomes).toEqual({ 'keep@example.net': 'accepted', 'lost@example.net': 'bounced' });
    expect(await suppressed('lost@example.net')).toBeDefined();
    expect(await suppressed('keep@example.net')).toBeUndefined();
  });

  it('two reports about one mail arriving together (often in one shared commit) both apply: the second bounce ends it', async () => {
    const id = await sentMail(['first@example.net', 'second@example.net']);
    const answers = await Promise.all(
      ['first@example.net', 'second@example.net'].map(async (address, place) => {
        const returnPath = await outbox.returnPathOf(id, place);
        return sendSmtp(outbox.bouncePort, {
          from: '',
          to: [returnPath],
          raw: dsn({
            returnPath,
            recipients: [{ address, action: 'failed', status: '5.1.1', diagnostic: `550 5.1.1 <${address}> unknown` }],
          }),
        });
      }),
    );
    expect(answers.map((a) => a.last.slice(0, 4))).toEqual(['250 ', '250 ']);
    const detail = await outbox.detail(id);
    expect(detail.status).toBe(MailStatus.ProviderError);
    expect(detail.rejectedRecipients).toBe(2);
    expect(detail.events.filter((e) => e.type === 'bounced')).toHaveLength(2);
    expect(detail.bounces).toHaveLength(2);
  });

  it('the console finds bounced mails: the status filter and the search list them with the bounced recipients counted', async () => {
    // docs/console.md §10.9: the status chips are the list's status filter, the search its q. A whole bounce turns
    // the mail ProviderError; a partial one leaves it ProviderSent with its bounced recipient in the row's count.
    const whole = await sentMail(['vanished-all@example.net']);
    const partial = await sentMail(['stays-partial@example.net', 'vanished-partial@example.net']);
    for (const [id, address] of [
      [whole, 'vanished-all@example.net'],
      [partial, 'vanished-partial@example.net'],
    ] as const) {
      const returnPath = await outbox.returnPathOf(id);
      const answer = await sendSmtp(outbox.bouncePort, {
        from: '',
        to: [returnPath],
        raw: dsn({
          returnPath,
          recipients: [{ address, action: 'failed', status: '5.1.1', diagnostic: `550 5.1.1 <${address}> unknown` }],
        }),
      });
      expect(answer.last).toMatch(/^250 /);
    }
    type ListAnswer = { data: Array<{ id: number; status: number; rejectedRecipients?: number; recipientCount?: number }> };
    const rowOf = async (query: string, id: number) =>
      (await getJson<ListAnswer>(`/api/v1/mail/list?${query}`)).body.data.find((m) => m.id === id);

    expect(await rowOf(`status=${MailStatus.ProviderError}&q=vanished-all`, whole)).toMatchObject({
      status: MailStatus.ProviderError,
      rejectedRecipients: 1,
      recipientCount: 1,
    });
    expect(await rowOf(`status=${MailStatus.ProviderSent}&q=vanished-all`, whole)).toBeUndefined();
    // The partial one: found under ProviderSent and by either recipient; the marker's "1 of 2" comes from this row.
    expect(await rowOf(`status=${MailStatus.ProviderSent}&q=vanished-partial`, partial)).toMatchObject({
      status: MailStatus.ProviderSent,
      rejectedRecipients: 1,
      recipientCount: 2,
    });
    expect(await rowOf('q=stays-partial', partial)).toBeDefined();
    expect(await rowOf(`status=${MailStatus.ProviderError}&q=vanished-partial`, partial)).toBeUndefined();
  });

  it('a delayed report (4.4.7, delayed) only adds an event', async () => {
    const id = await sentMail(['slow@example.net']);
    const returnPath = await outbox.returnPathOf(id);
    const answer = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [returnPath],
      raw: dsn({
        returnPath,
        recipients: [{ address: 'slow@example.net', action: 'delayed', status: '4.4.7', diagnostic: '451 4.4.7 try later' }],
      }),
    });
    expect(answer.last).toMatch(/^250 /);
    const detail = await outbox.detail(id);
    expect(detail.status).toBe(MailStatus.ProviderSent);
    expect(detail.recipients!.find((r) => r.kind === 'to')!.outcome).toBe('accepted');
    expect(detail.events.at(-1)).toMatchObject({ type: 'bounce-delayed' });
    expect(await suppressed('slow@example.net')).toBeUndefined();
  });

  it('an ARF complaint marks the recipient complained and suppresses it; the status stays', async () => {
    const id = await sentMail(['angry@example.net']);
    const returnPath = await outbox.returnPathOf(id);
    const answer = await sendSmtp(outbox.bouncePort, {
      from: 'feedback@isp.test',
      to: [returnPath],
      raw: arf({ returnPath, recipient: 'angry@example.net' }),
    });
    expect(answer.last).toMatch(/^250 /);
    const detail = await outbox.detail(id);
    expect(detail.status).toBe(MailStatus.ProviderSent);
    expect(detail.recipients!.find((r) => r.kind === 'to')!.outcome).toBe('complained');
    expect(detail.events.at(-1)).toMatchObject({ type: 'complained' });
    expect(await suppressed('angry@example.net')).toMatchObject({ reason: 'complaint', mail_id: id });
    const events = await outbox.running.store.db
      .selectFrom('application_events')
      .select(['type', 'payload'])
      .where('mail_id', '=', id)
      .orderBy('mail_seq')
      .execute();
    expect(events.map((e) => e.type)).toEqual(['mail.queued', 'mail.sent', 'mail.complained']);
    expect(JSON.parse(events[2]!.payload)).toMatchObject({
      mailId: id,
      sequence: 3,
      status: 'ProviderSent',
      complained: ['angry@example.net'],
      feedbackType: 'abuse',
      outcomes: [{ address: 'angry@example.net', outcome: 'complained' }],
    });
  });

  it('a forged return path (wrong HMAC), another domain or a plain address are refused at RCPT with 550', async () => {
    const id = await sentMail(['target@example.net']);
    const genuine = await outbox.returnPathOf(id);
    const forged = genuine.replace(/-([a-z2-7]{10})@/, (_, mac: string) => `-${mac.startsWith('a') ? 'b' : 'a'}${mac.slice(1)}@`);
    for (const address of [
      forged,
      genuine.replace('@bounce.test', '@other.test'),
      `postmaster@${BOUNCE_DOMAIN}`,
      `b-${id + 1000}-aaaaaaaaaa@${BOUNCE_DOMAIN}`,
    ]) {
      const answer = await sendSmtp(outbox.bouncePort, {
        from: '',
        to: [address],
        raw: dsn({ returnPath: address, recipients: [{ address: 'target@example.net', action: 'failed', status: '5.1.1' }] }),
      });
      expect(answer.last, address).toMatch(/^550 5\.1\.1 /);
    }
    expect((await outbox.detail(id)).status).toBe(MailStatus.ProviderSent);
  });

  it('a report for no mail is kept unmatched and listed; the Message-ID it returns is not looked up (a gone mail matches nothing)', async () => {
    const codec = (await outbox.running.services.bounces.returnPaths())!;
    const noMail = codec.addressOf(987_654, 0);
    const unmatched = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [noMail],
      raw: dsn({
        returnPath: noMail,
        messageId: '<nobody@nowhere.test>',
        recipients: [{ address: 'x@example.net', action: 'failed', status: '5.1.1' }],
      }),
    });
    expect(unmatched.last).toMatch(/^250 /);
    const list = await getJson<BouncesResponse>('/api/v1/bounces?matched=false');
    expect(list.status).toBe(200);
    const report = list.body.data.find((r) => r.envelopeTo === noMail)!;
    expect(report).toMatchObject({ mailId: null, matchedBy: null, kind: 'dsn' });
    expect(report.summary.recipients).toEqual([{ recipient: 'x@example.net', action: 'failed', status: '5.1.1', diagnostic: null }]);

    const id = await sentMail(['byid@example.net']);
    const messageId = (await outbox.detail(id)).headers.find((h) => h.name.toLowerCase() === 'message-id')!.value;
    const byId = await sendSmtp(outbox.bouncePort, {
      from: '',
      to: [noMail],
      raw: dsn({ returnPath: noMail, messageId, recipients: [{ address: 'byid@example.net', action: 'failed', status: '5.1.1' }] }),
    });
    expect(byId.last).toMatch(/^250 /);
    // Anyone who saw the mail knows its Message-ID: a report to a return path whose mail is gone stays unmatched.
    expect((await getJson<BouncesResponse>('/api/v1/bounces?matched=true')).body.data.find((r) => r.mailId === id)).toBeUndefined();
    expect((await outbox.detail(id)).status).toBe(MailStatus.ProviderSent);
    expect(await suppressed('byid@example.net')).toBeUndefined();
  });

  it('a report larger than 1 MiB is refused with 552 and not kept', async () => {
    const id = await sentMail(['big@example.net']);
    const returnPath = await outbox.returnPathOf(id);
    const before = (await getJson<BouncesResponse>('/api/v1/bounces?limit=500')).body.data.length;
    const padding = `${'x'.repeat(998)}\r\n`.repeat(1100);
    const raw = dsn({ returnPath, recipients: [{ address: 'big@example.net', action: 'failed', status: '5.1.1' }] }).replace(
      'Your message could not be delivered.',
      padding,
    );
    const answer = await sendSmtp(outbox.bouncePort, { from: '', to: [returnPath], raw });
    expect(answer.last).toMatch(/^552 /);
    expect((await getJson<BouncesResponse>('/api/v1/bounces?limit=500')).body.data.length).toBe(before);
    expect((await outbox.detail(id)).status).toBe(MailStatus.ProviderSent);
  });

  it('a malformed multipart is kept as unknown with the reason; the listener keeps answering', async () => {
    const id = await sentMail(['odd@example.net']);
    const returnPath = await outbox.returnPathOf(id);
    const raw = [
      `To: ${returnPath}`,
      'Subject: broken',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="NEVER-CLOSED"',
      '',
      '--NEVER-CLOSED',
      'Content-Type: message/delivery-status',
      'Content-Transfer-Encoding: base64',
      '',
      '%%%% not base64 ((((',
      '--WRONG',
      'Final-Recipient rfc822 odd@example.net',
      '',
    ].join('\r\n');
    const answer = await sendSmtp(outbox.bouncePort, { from: '', to: [returnPath], raw });
    expect(answer.last).toMatch(/^250 /);
    const report = (await getJson<BouncesResponse>('/api/v1/bounces?limit=500')).body.data.find((r) => r.summary.subject === 'broken')!;
    expect(report).toMatchObject({ kind: 'unknown', mailId: id });
    expect(report.summary.problem).toMatch(/\S/);
    expect((await outbox.detail(id)).status).toBe(MailStatus.ProviderSent);
    const after = await sendSmtp(outbox.bouncePort, { from: '', to: [returnPath], raw: arf({ returnPath, recipient: 'odd@example.net' }) });
    expect(after.last).toMatch(/^250 /);
  });
});

describe('GET /api/v1/bounces', () => {
  it('pages newest first by cursor, shows one report and its raw bytes, and answers 400/404/401 as documented', async () => {
    const first = await getJson<BouncesResponse>('/api/v1/bounces?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    const second = await getJson<BouncesResponse>(`/api/v1/bounces?limit=2&cursor=${encodeURIComponent(first.body.meta.nextCursor!)}`);
    expect(second.body.data[0]!.id).toBeLessThan(first.body.data[1]!.id);

    const one = await getJson<{ data: BounceReport[] }>(`/api/v1/bounces/${first.body.data[0]!.id}`);
    expect(one.body.data[0]).toEqual(first.body.data[0]);
    const raw = await outbox.running.app.inject({
      method: 'GET',
      url: `/api/v1/bounces/${first.body.data[0]!.id}/raw`,
      headers: { authorization: `Token ${outbox.token}` },
    });
    expect(raw.headers['content-type']).toMatch(/^message\/rfc822/);
    expect(raw.rawPayload.length).toBe(first.body.data[0]!.size);

    const missing = await getJson<{ error: { code: string } }>('/api/v1/bounces/99999999');
    expect(missing).toMatchObject({ status: 404, body: { error: { code: 'bounce_not_found' } } });
    const badCursor = await getJson<{ error: { code: string; message: string } }>('/api/v1/bounces?cursor=zzz');
    expect(badCursor).toMatchObject({ status: 400, body: { error: { code: 'invalid_cursor' } } });
    const badMatched = await getJson<{ error: { message: string } }>('/api/v1/bounces?matched=maybe');
    expect(badMatched.status).toBe(400);
    expect(badMatched.body.error.message).toContain('matched');
    const anonymous = await outbox.running.app.inject({ method: 'GET', url: '/api/v1/bounces' });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe('without BOUNCE_DOMAIN', () => {
  it('the envelope sender stays the one submitted and no secret is created', async () => {
    const plain = await startBounceOutbox({ RELAY_URL: relay.url, BOUNCE_DOMAIN: '', BOUNCE_SMTP_PORT: 'off' });
    try {
      const id = await plain.submit(['plain@example.net'], 'No bounce domain');
      await plain.waitForStatus(id, MailStatus.ProviderSent);
      await waitUntil(() => relay.received.some((m) => m.raw.toString().includes('Subject: No bounce domain')));
      const relayed = relay.received.find((m) => m.raw.toString().includes('Subject: No bounce domain'))!;
      expect(relayed.mailFrom).toBe('shop@example.com');
      expect(plain.running.bounceSmtpPort).toBeUndefined();
      const secrets = await plain.running.store.db.selectFrom('server_secrets').selectAll().execute();
      expect(secrets).toEqual([]);
    } finally {
      await plain.stop();
    }
  });
});

describe('BOUNCES=off', () => {
  it('runs no listener on this instance, while its worker still sends with the return path', async () => {
    const other = await startBounceOutbox({ RELAY_URL: relay.url, BOUNCES: 'off' });
    try {
      expect(other.running.bounceSmtpPort).toBeUndefined();
      const id = await other.submit(['elsewhere@example.net'], 'Bounces read elsewhere');
      await other.waitForStatus(id, MailStatus.ProviderSent);
      const relayed = relay.received.find((m) => m.raw.toString().includes('Subject: Bounces read elsewhere'))!;
      expect(relayed.mailFrom).toBe(await other.returnPathOf(id));
    } finally {
      await other.stop();
    }
  });
});
