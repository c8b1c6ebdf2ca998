/**
 * The pipeline end to end, wired as `npm start` wires it: mail submitted over HTTP and over SMTP by real
 * clients reaches a real relay byte for byte; and a worker process killed with SIGKILL mid-delivery loses
 * nothing once restarted, resending at most the mails it had in flight.
 */
import { MailStatus, type Mail } from '@outbox/contract';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { openStore } from '../../src/store/connection.js';
import {
  freshEnvironment,
  killAllSpawned,
  spawnOutbox,
  startInProcess,
  type OutboxEnvironment,
  type OutboxProcess,
} from '../support/outbox-process.js';
import { freePort, waitUntil } from '../support/net.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let relay: TestRelay;
let environment: OutboxEnvironment;
let running: RunningOutbox | undefined;
let processes: OutboxProcess[] = [];

beforeEach(async () => {
  relay = await startTestRelay();
});

afterEach(async () => {
  await running?.stop();
  running = undefined;
  await Promise.all(processes.map((p) => p.kill()));
  processes = [];
  await killAllSpawned();
  await relay.close();
  await environment?.dispose();
});

async function operatorToken(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
  });
  return ((await response.json()) as { data: Array<{ token: string }> }).data[0]!.token;
}

describe('pipeline: intake to relay', () => {
  it('a mail submitted over SMTP by a real client reaches the relay byte for byte: envelope, headers, body, attachment', async () => {
    const smtpPort = await freePort();
    environment = await freshEnvironment({ RELAY_URL: relay.url, SMTP_PORT: String(smtpPort) });
    running = await startInProcess(environment.env);
    const apiKey = await running.services.auth.createApiKey('shop');

    const raw = await new MailComposer({
      from: '"Zoë Shop" <shop@example.com>',
      to: 'Ann <ann@example.net>',
      cc: 'bob@example.org',
      subject: 'Ihre Bestellung 東京 №42',
      text: 'Grüße\r\n.leading dot line\r\n',
      html: '<p>Grüße</p>',
      messageId: '<fixed-id-1@example.com>',
      attachments: [{ filename: 'invoice.pdf', content: Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 256)) }],
    })
      .compile()
      .build();
    const client = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      ignoreTLS: true,
      auth: { user: 'anything', pass: apiKey },
    });
    const info = await client.sendMail({
      envelope: { from: 'bounces@example.com', to: ['ann@example.net', 'bob@example.org', 'hidden@example.org'] },
      raw,
    });
    client.close();
    expect(info.response).toMatch(/^250 OK: queued as \d+/);
    const id = Number(/queued as (\d+)/.exec(info.response)![1]);

    await waitUntil(async () => (await running!.services.mails.getMailDetail(id)).status === MailStatus.ProviderSent);
    expect(relay.received).toHaveLength(1);
    const delivered = relay.received[0]!;
    expect(delivered.mailFrom).toBe('bounces@example.com');
    expect(delivered.rcptTo).toEqual(['ann@example.net', 'bob@example.org', 'hidden@example.org']);
    // smtp-server hands over the DATA bytes with dot-stuffing undone and without the terminating CRLF.CRLF.
    expect(delivered.raw.toString('latin1').replace(/\r\n$/, '')).toBe(raw.toString('latin1').replace(/\r\n$/, ''));

    const mail = await running.services.mails.getMailDetail(id);
    expect(mail).toMatchObject({
      fromName: 'Zoë Shop',
      fromMail: 'shop@example.com',
      subject: 'Ihre Bestellung 東京 №42',
      messageId: '<fixed-id-1@example.com>',
    });
    expect(mail.to).toEqual([{ recipientName: 'Ann', recipientMail: 'ann@example.net' }]);
    expect(mail.envelopeTo).toEqual(['ann@example.net', 'bob@example.org', 'hidden@example.org']);
  });

  it('a mail submitted over SMTP without a Message-ID gets one at acceptance, and the relay sees the same one', async () => {
    const smtpPort = await freePort();
    environment = await freshEnvironment({ RELAY_URL: relay.url, SMTP_PORT: String(smtpPort) });
    running = await startInProcess(environment.env);
    const apiKey = await running.services.auth.createApiKey('shop');
    const raw = 'From: shop@example.com\r\nTo: ann@example.net\r\nSubject: no id\r\n\r\nhello\r\n';
    const client = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      ignoreTLS: true,
      auth: { user: 'x', pass: apiKey },
    });
    const info = await client.sendMail({ envelope: { from: 'shop@example.com', to: ['ann@example.net'] }, raw });
    client.close();
    const id = Number(/queued as (\d+)/.exec(info.response)![1]);
    await waitUntil(async () => (await running!.services.mails.getMailDetail(id)).status === MailStatus.ProviderSent);
    const mail = await running.services.mails.getMailDetail(id);
    expect(mail.messageId).toMatch(/^<.+@.+>$/);
    expect(relay.received[0]!.messageId).toBe(mail.messageId);
    expect(relay.received[0]!.raw.toString()).toContain('Subject: no id\r\n\r\nhello');
  });

  it('SMTP submission refuses a bad API key (535), an operator password (535) and a revoked key, and takes nothing', async () => {
    const smtpPort = await freePort();
    environment = await freshEnvironment({ RELAY_URL: relay.url, SMTP_PORT: String(smtpPort) });
    running = await startInProcess(environment.env);
    const apiKey = await running.services.auth.createApiKey('shop');
    await running.services.auth.revokeApiKey('shop');
    const send = (pass: string) => {
      const client = nodemailer.createTransport({
        host: '127.0.0.1',
        port: smtpPort,
        secure: false,
        ignoreTLS: true,
        auth: { user: 'ops', pass },
      });
      return client
        .sendMail({ envelope: { from: 'a@example.com', to: ['b@example.com'] }, raw: 'Subject: x\r\n\r\nx\r\n' })
        .finally(() => client.close());
    };
    for (const pass of ['obx_wrong', 'correct horse battery', apiKey]) {
      await expect(send(pass)).rejects.toMatchObject({ responseCode: 535 });
    }
    expect((await running.services.mails.listMails({ limit: 1 })).meta.total).toBe(0);
  });

  it('an SMTP session that authenticated before its application was revoked sends no more mail (the key is checked again for every message)', async () => {
    const smtpPort = await freePort();
    environment = await freshEnvironment({ RELAY_URL: relay.url, SMTP_PORT: String(smtpPort), WORKER: 'off' });
    running = await startInProcess(environment.env);
    const apiKey = await running.services.auth.createApiKey('shop');
    // One connection for both mails: a pool of one keeps the authenticated session open between them.
    const client = nodemailer.createTransport({
      pool: true,
      maxConnections: 1,
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      ignoreTLS: true,
      auth: { user: 'x', pass: apiKey },
    });
    try {
      const send = () =>
        client.sendMail({ envelope: { from: 'shop@example.com', to: ['ann@example.net'] }, raw: 'Subject: x\r\n\r\nx\r\n' });
      expect((await send()).response).toMatch(/queued as \d+/);
      await running.services.auth.revokeApiKey('shop');
      await expect(send()).rejects.toMatchObject({ responseCode: 535 });
    } finally {
      client.close();
    }
    expect((await running.services.mails.listMails({ limit: 1 })).meta.total).toBe(1);
  });

  it('a mail submitted over HTTP reaches the relay as the stored bytes, with the envelope of to, cc and bcc', async () => {
    environment = await freshEnvironment({ RELAY_URL: relay.url });
    running = await startInProcess(environment.env);
    const apiKey = await running.services.auth.createApiKey('shop');
    const baseUrl = `http://127.0.0.1:${running.httpPort}`;
    const response = await fetch(`${baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify({
        fromName: 'Zoë Shop',
        fromMail: 'shop@example.com',
        to: [{ recipientName: 'Ann Ωmega', recipientMail: 'ann@example.net' }],
        cc: [{ recipientMail: 'bob@example.org' }],
        bcc: [{ recipientMail: 'audit@example.org' }],
        subject: 'Grüße aus 東京',
        text: 'plain body',
        html: '<p>html body</p>',
        headers: { 'X-Campaign': 'winter' },
      }),
    });
    expect(response.status).toBe(202);
    const [accepted] = ((await response.json()) as { data: Mail[] }).data;
    await waitUntil(async () => (await running!.services.mails.getMailDetail(accepted!.id)).status === MailStatus.ProviderSent);

    const token = await operatorToken(baseUrl);
    const stored = Buffer.from(
      await (await fetch(`${baseUrl}/api/v1/mail/${accepted!.id}/raw`, { headers: { authorization: `Token ${token}` } })).arrayBuffer(),
    );
    const delivered = relay.received[0]!;
    expect(delivered.raw.toString('latin1').replace(/\r\n$/, '')).toBe(stored.toString('latin1').replace(/\r\n$/, ''));
    expect(delivered.mailFrom).toBe('shop@example.com');
    expect(delivered.rcptTo.sort()).toEqual(['ann@example.net', 'audit@example.org', 'bob@example.org']);
    const text = delivered.raw.toString('latin1');
    expect(text).toMatch(/^X-Campaign: winter$/m);
    expect(text).not.toMatch(/^Bcc:/im);
    expect(text).toContain('plain body');
    expect(text).toContain('<p>html body</p>');
  });
});

describe('pipeline: crash and restart', () => {
  it('a worker process killed with SIGKILL mid-delivery, then restarted: every accepted mail is delivered, duplicates only among those in flight', async () => {
    // 500 mails put the kill in the middle of delivery, with a batch of claims in flight, as 3,000 did.
    const total = 500;
    relay.delayMs = 2; // a provider that takes a little time, so the kill finds mails in flight
    // The lease outlives a stall of a busy machine. With 2 s the bound below failed at load 24 on two cores
    // (136 sent twice, 123 in flight at the kill): a mail claimed ahead and waiting for a send slot can outlive
    // its lease under the live worker and be sent again. The restarted worker takes the killed one's mails
    // once their lease ends, so a longer lease costs the test about that much time.
    // The killed worker's mails come back when its heartbeat is 2 s stale rather than when their leases end: the
    // restarted worker is the only live instance, and a sweeper never counts its own instance stale.
    environment = await freshEnvironment({
      RELAY_URL: relay.url,
      LEASE_SECONDS: '8',
      WORKER_CONCURRENCY: '50',
      HEARTBEAT_INTERVAL: '1s',
      INSTANCE_STALE_AFTER: '2s',
    });

    // Accept every mail first, with no worker running, so the kill happens during delivery only.
    const intake = await spawnOutbox({ ...environment.env, WORKER: 'off' });
    processes.push(intake);
    const store = await openStore({
      dataDir: environment.dataDir,
      ...(environment.env.DATABASE_URL ? { databaseUrl: environment.env.DATABASE_URL } : {}),
      maxConnections: 2,
    });
    try {
      const { createAuthService } = await import('../../src/auth/auth.service.js');
      const apiKey = await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('load');
      // With routes configured (docs/relays.md): every mail goes out through the router's named relay `sink`.
      const { createRelayService } = await import('../../src/relays/relay.service.js');
      const relays = createRelayService({ store, clock: { now: Date.now } });
      await relays.createRelay({ name: 'sink', url: relay.url }, 'operator:test');
      await relays.replaceRoutes([{ match: {}, relays: ['sink'] }], 'operator:test');
      for (let offset = 0; offset < total; offset += 500) {
        const batch = Array.from({ length: Math.min(500, total - offset) }, (_, i) => ({
          fromMail: 'shop@example.com',
          to: [{ recipientMail: `user${offset + i}@example.net` }],
          subject: `mail ${offset + i}`,
          text: 'x',
        }));
        const response = await fetch(`${intake.baseUrl}/api/v1/mail`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
          body: JSON.stringify(batch),
        });
        expect(response.status).toBe(202);
      }
      await intake.stop();
      processes = [];

      const worker = await spawnOutbox({ ...environment.env });
      processes.push(worker);
      // A fresh worker process delivers a fifth before the kill; at load 25 its start and first batches took over 20 s.
      await waitUntil(() => relay.received.length >= total / 5, { timeoutMs: 120_000, what: 'a fifth of the mails at the relay' });
      await worker.kill();
      processes = [];
      const inFlightAtKill = Number(
        // Processing: a lease in the queue (mail/leases.ts).
        (
          await store.db
            .selectFrom('mail_queue')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('lease_owner', 'is not', null)
            .executeTakeFirstOrThrow()
        ).n,
      );
      const deliveredAtKill = relay.received.length;
      expect(deliveredAtKill).toBeLessThan(total);

      const restarted = await spawnOutbox({ ...environment.env });
      processes.push(restarted);
      await waitUntil(
        async () => {
          const sent = await store.db
            .selectFrom('mails')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('status', '=', MailStatus.ProviderSent)
            .executeTakeFirstOrThrow();
          return Number(sent.n) === total;
        },
        { timeoutMs: 180_000, what: 'every mail ProviderSent after the restart' },
      );

      const rows = await store.db.selectFrom('mails').select(['message_id']).execute();
      const timesReceived = new Map<string, number>();
      for (const message of relay.received) timesReceived.set(message.messageId!, (timesReceived.get(message.messageId!) ?? 0) + 1);
      for (const row of rows) expect(timesReceived.get(row.message_id) ?? 0, row.message_id).toBeGreaterThanOrEqual(1);
      const duplicates = relay.received.length - timesReceived.size;
      expect(timesReceived.size).toBe(total);
      expect(duplicates).toBeLessThanOrEqual(inFlightAtKill);
      // Through the route, before and after the kill: every sent event names the relay that took it.
      const sent = await store.db.selectFrom('mail_events').select('detail').where('type', '=', 'sent').execute();
      expect(sent).toHaveLength(total);
      expect(sent.filter((event) => (JSON.parse(event.detail ?? '{}') as { relay?: string }).relay !== 'sink')).toEqual([]);
      console.log(
        `crash test: ${deliveredAtKill} delivered before SIGKILL, ${inFlightAtKill} in flight at the kill, ${duplicates} delivered twice`,
      );
    } finally {
      await store.close();
    }
    // Three processes: with 3,000 mails 16 s on a quiet machine, past 120 s at load 20.
  }, 300_000);
});
