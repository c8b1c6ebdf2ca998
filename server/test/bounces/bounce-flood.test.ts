/**
 * The bounce listener cannot flood the store (docs/bounces.md#limits). Anyone who received a mail saw its return
 * path and may send reports to it: here real SMTP clients send a thousand copies of one hard bounce, a report with
 * a 1 MiB Diagnostic-Code, a stream of unmatched reports, and reports while the disk reserve is reached; the
 * retention purge and a mail's delete take the reports with them. Outbox runs as `npm start` starts it, on a clock
 * the test can move forward (for the purge), one server for the file; each test uses mails of its own.
 */
import path from 'node:path';
import { MailStatus } from '@outbox/contract';
import type { BounceReport, BounceResponse } from '@outbox/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIAGNOSTIC_MAX_BYTES, RAW_KEPT_BYTES } from '../../src/bounces/report-limits.js';
import { loadConfig } from '../../src/config.js';
import { start, type RunningOutbox } from '../../src/main.js';
import { freePort, waitUntil } from '../support/net.js';
import { freshEnvironment, type OutboxEnvironment } from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { arf, BOUNCE_DOMAIN, dsn, sendSmtp, reportCountsOfMail } from './bounce-support.js';

const DAY_MS = 86_400_000;
/** The clock Outbox runs on: the real one, plus what a test moved it forward. */
let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };

let relay: TestRelay;
let environment: OutboxEnvironment;
let outbox: RunningOutbox;
let bouncePort: number;
let apiKey: string;
let token: string;

beforeAll(async () => {
  relay = await startTestRelay();
  bouncePort = await freePort();
  environment = await freshEnvironment({
    RELAY_URL: relay.url,
    BOUNCE_DOMAIN,
    BOUNCE_SMTP_PORT: String(bouncePort),
    SMTP_PORT: 'off',
    BOUNCE_UNMATCHED_KEEP: '10',
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
  outbox = await start(loadConfig(environment.env), { clock, consoleDir: path.join(import.meta.dirname, 'no-console') });
  apiKey = await outbox.services.auth.createApiKey('shop');
  token = await login();
});

afterAll(async () => {
  await outbox?.stop();
  await relay?.close();
  await environment?.dispose();
});

async function login(): Promise<string> {
  const response = await outbox.app.inject({
    method: 'POST',
    url: '/api/v1/login',
    payload: { username: 'ops', password: 'correct horse battery' },
  });
  return (response.json() as { data: Array<{ token: string }> }).data[0]!.token;
}

const db = () => outbox.store.db;

async function api<T>(method: 'GET' | 'DELETE', url: string): Promise<{ status: number; body: T }> {
  const response = await outbox.app.inject({ method, url, headers: { authorization: `Token ${token}` } });
  return { status: response.statusCode, body: response.json() as T };
}

async function sentMail(to: string): Promise<number> {
  const response = await outbox.app.inject({
    method: 'POST',
    url: '/api/v1/mail',
    headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/json' },
    payload: { fromMail: 'shop@example.com', to: [{ recipientMail: to }], subject: 'Your order', text: 'Hello' },
  });
  expect(response.statusCode).toBe(202);
  const id = (response.json() as { data: Array<{ id: number }> }).data[0]!.id;
  await waitUntil(
    async () =>
      (await db().selectFrom('mails').select('status').where('id', '=', id).executeTakeFirst())?.status === MailStatus.ProviderSent,
    {
      what: `mail ${id} ProviderSent`,
    },
  );
  return id;
}

const returnPathOf = async (id: number, recipient = 0) => (await outbox.services.bounces.returnPaths())!.addressOf(id, recipient);

function hardBounce(returnPath: string, address: string, diagnostic: string): string {
  return dsn({ returnPath, recipients: [{ address, action: 'failed', status: '5.1.1', diagnostic }] });
}

/** Sends `count` copies of a report, `parallel` SMTP sessions at a time; answers every final reply. */
async function sendCopies(count: number, parallel: number, message: { to: string[]; raw: string }): Promise<string[]> {
  const replies: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        next += 1;
        replies.push((await sendSmtp(bouncePort, { from: '', ...message })).last);
      }
    }),
  );
  return replies;
}

/** Everything a mail's reports and events hold, in bytes: what a flood would grow. */
async function bytesOfMail(id: number): Promise<{ reports: number; events: number; applicationEvents: number; total: number }> {
  const one = async (query: Promise<{ bytes: unknown } | undefined>) => Number((await query)?.bytes ?? 0);
  const reports = await one(
    db()
      .selectFrom('bounce_reports')
      .select(sql<number>`coalesce(sum(length(raw) + length(summary)), 0)`.as('bytes'))
      .where('mail_id', '=', id)
      .executeTakeFirst(),
  );
  const events = await one(
    db()
      .selectFrom('mail_events')
      .select(sql<number>`coalesce(sum(length(coalesce(detail, ''))), 0)`.as('bytes'))
      .where('mail_id', '=', id)
      .executeTakeFirst(),
  );
  const applicationEvents = await one(
    db()
      .selectFrom('application_events')
      .select(sql<number>`coalesce(sum(length(payload)), 0)`.as('bytes'))
      .where('mail_id', '=', id)
      .executeTakeFirst(),
  );
  return { reports, events, applicationEvents, total: reports + events + applicationEvents };
}

const countsOfMail = (id: number) => reportCountsOfMail(db(), id);

describe('a flood of copies of one report', () => {
  // 200 copies, eight sessions at once, show that a copy changes nothing as well as 1,000 did: each is matched to the
  // report kept, whatever their number.
  it('200 identical hard bounces: one report kept, one mail event, one mail.bounced; the rows do not grow', async () => {
    const id = await sentMail('gone@example.net');
    const returnPath = await returnPathOf(id);
    const message = { to: [returnPath], raw: hardBounce(returnPath, 'gone@example.net', '550 5.1.1 <gone@example.net>: User unknown') };
    expect((await sendCopies(1, 1, message))[0]).toMatch(/^250 OK: report \d+ kept/);
    expect(await countsOfMail(id)).toEqual({ reports: 1, bouncedEvents: 1, applicationEvents: 1 });
    const afterFirst = await bytesOfMail(id);

    const started = performance.now();
    const replies = await sendCopies(199, 8, message);
    const seconds = (performance.now() - started) / 1000;
    // Every copy is taken (250: nothing is lost, and the reporter stops resending) but changes nothing.
    expect(replies.filter((reply) => /^250 OK: nothing new/.test(reply))).toHaveLength(199);
    expect(await countsOfMail(id)).toEqual({ reports: 1, bouncedEvents: 1, applicationEvents: 1 });
    const afterFlood = await bytesOfMail(id);
    expect(afterFlood).toEqual(afterFirst);
    const mail = await db().selectFrom('mails').select(['status', 'rejected_recipients']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(mail).toEqual({ status: MailStatus.ProviderError, rejected_recipients: 1 });
    console.info(
      `199 copies in ${seconds.toFixed(1)} s (${Math.round(199 / seconds)}/s); the mail's rows: ${JSON.stringify(afterFlood)} bytes`,
    );
  }, 180_000);
});

describe('reports that change nothing', () => {
  it('delayed reports: at most 20 kept per mail (each an event); later ones neither kept nor an event', async () => {
    const id = await sentMail('later@example.net');
    const returnPath = await returnPathOf(id);
    const replies: string[] = [];
    for (let i = 0; i < 25; i++) {
      const raw = dsn({
        returnPath,
        recipients: [{ address: 'later@example.net', action: 'delayed', status: '4.4.1', diagnostic: `try ${i}` }],
      });
      replies.push((await sendSmtp(bouncePort, { from: '', to: [returnPath], raw })).last);
    }
    expect(replies.filter((reply) => /^250 OK: report \d+ kept/.test(reply))).toHaveLength(20);
    expect(replies.slice(20).every((reply) => /^250 OK: nothing new/.test(reply))).toBe(true);
    const delayedEvents = await db()
      .selectFrom('mail_events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('mail_id', '=', id)
      .where('type', '=', 'bounce-delayed')
      .executeTakeFirstOrThrow();
    expect(Number(delayedEvents.n)).toBe(20);
    expect((await countsOfMail(id)).reports).toBe(20);
    // A hard bounce still applies past the cap: it changes the recipient.
    const bounce = await sendSmtp(bouncePort, { from: '', to: [returnPath], raw: hardBounce(returnPath, 'later@example.net', '550 gone') });
    expect(bounce.last).toMatch(/^250 OK: report \d+ kept/);
    expect(await countsOfMail(id)).toEqual({ reports: 21, bouncedEvents: 1, applicationEvents: 1 });
  }, 60_000);

  it('a second complaint, a bounce or a delay after a complaint: no event, not kept again', async () => {
    const id = await sentMail('twice@example.net');
    const returnPath = await returnPathOf(id);
    expect(
      (await sendSmtp(bouncePort, { from: '', to: [returnPath], raw: arf({ returnPath, recipient: 'twice@example.net' }) })).last,
    ).toMatch(/^250 OK: report \d+ kept/);
    const again = [
      arf({ returnPath, recipient: 'twice@example.net' }),
      hardBounce(returnPath, 'twice@example.net', '550 gone'),
      dsn({ returnPath, recipients: [{ address: 'twice@example.net', action: 'delayed', status: '4.4.1' }] }),
    ];
    for (const raw of again) expect((await sendSmtp(bouncePort, { from: '', to: [returnPath], raw })).last).toMatch(/^250 OK: nothing new/);
    const types = await db().selectFrom('mail_events').select('type').where('mail_id', '=', id).orderBy('id').execute();
    expect(types.filter((e) => ['complained', 'bounced', 'bounce-delayed'].includes(e.type)).map((e) => e.type)).toEqual(['complained']);
    const told = await db().selectFrom('application_events').select('type').where('mail_id', '=', id).execute();
    expect(told.map((e) => e.type).filter((t) => t === 'mail.complained' || t === 'mail.bounced')).toEqual(['mail.complained']);
    expect((await countsOfMail(id)).reports).toBe(1);
    const recipient = await db()
      .selectFrom('mail_recipients')
      .select('outcome')
      .where('mail_id', '=', id)
      .where('kind', '=', 'envelope')
      .executeTakeFirstOrThrow();
    expect(recipient.outcome).toBe('complained');
  }, 60_000);
});

describe('a report with a 1 MiB Diagnostic-Code', () => {
  it('at most 1 KiB of it is copied anywhere (six places), marked as cut; the raw report is kept up to 64 KiB', async () => {
    const id = await sentMail('huge@example.net');
    const returnPath = await returnPathOf(id);
    // Folded into lines of 1,000 characters, as an MTA would write a long field; just under the listener's 1 MiB.
    const lines = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(4, '0')}${'x'.repeat(995)}`);
    const diagnostic = `550 5.1.1 mailbox unavailable ${lines.join('\r\n ')}`;
    const raw = hardBounce(returnPath, 'huge@example.net', diagnostic);
    expect(raw.length).toBeGreaterThan(1_000_000);
    const answer = await sendSmtp(bouncePort, { from: '', to: [returnPath], raw });
    expect(answer.last).toMatch(/^250 OK: report \d+ kept/);

    const capped = (text: string | null | undefined) => {
      expect(text).toMatch(/^(smtp; )?550 5\.1\.1 mailbox unavailable 0000x+.* … \[truncated: \d{7} bytes in all\]$/s);
      expect(Buffer.byteLength(text!)).toBeLessThanOrEqual(DIAGNOSTIC_MAX_BYTES);
    };
    const diagnosticOf = (json: string, path: (value: never) => unknown) => path(JSON.parse(json) as never) as string;
    // 1. The report's summary.
    const report = await db().selectFrom('bounce_reports').selectAll().where('mail_id', '=', id).executeTakeFirstOrThrow();
    capped(diagnosticOf(report.summary, (s: { recipients: Array<{ diagnostic: string }> }) => s.recipients[0]!.diagnostic));
    expect(report.summary.length).toBeLessThan(2 * DIAGNOSTIC_MAX_BYTES);
    // 2. The mail event.
    const event = await db()
      .selectFrom('mail_events')
      .select('detail')
      .where('mail_id', '=', id)
      .where('type', '=', 'bounced')
      .executeTakeFirstOrThrow();
    capped(diagnosticOf(event.detail!, (d: { recipients: Array<{ diagnostic: string }> }) => d.recipients[0]!.diagnostic));
    expect(event.detail!.length).toBeLessThan(2 * DIAGNOSTIC_MAX_BYTES);
    // 3. The application event (what webhooks send).
    const applicationEvent = await db()
      .selectFrom('application_events')
      .select('payload')
      .where('mail_id', '=', id)
      .where('type', '=', 'mail.bounced')
      .executeTakeFirstOrThrow();
    capped(diagnosticOf(applicationEvent.payload, (p: { bounced: Array<{ reply: string }> }) => p.bounced[0]!.reply));
    expect(applicationEvent.payload.length).toBeLessThan(4 * DIAGNOSTIC_MAX_BYTES);
    // 4. The recipient's reply.
    const recipient = await db()
      .selectFrom('mail_recipients')
      .select('reply')
      .where('mail_id', '=', id)
      .where('kind', '=', 'envelope')
      .executeTakeFirstOrThrow();
    capped(recipient.reply);
    // 5. The suppression.
    const suppression = await db()
      .selectFrom('suppressions')
      .select('detail')
      .where('address', '=', 'huge@example.net')
      .executeTakeFirstOrThrow();
    capped(suppression.detail);
    // 6. The mail's provider reply.
    const mail = await db().selectFrom('mails').select(['status', 'provider_reply']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(mail.status).toBe(MailStatus.ProviderError);
    capped(mail.provider_reply);

    // The raw bytes: the first 64 KiB, and the report says how many came.
    expect(report.raw.length).toBe(RAW_KEPT_BYTES);
    const shown = await api<BounceResponse>('GET', `/api/v1/bounces/${report.id}`);
    expect(shown.body.data[0]).toMatchObject({ size: RAW_KEPT_BYTES, summary: { rawSize: Buffer.byteLength(raw) } });
    // What the mail detail shows is as short.
    const detail = await outbox.app.inject({ method: 'GET', url: `/api/v1/mail/${id}`, headers: { authorization: `Token ${token}` } });
    expect(detail.body.length).toBeLessThan(20_000);
  }, 60_000);
});

describe('unmatched reports', () => {
  it('are kept up to BOUNCE_UNMATCHED_KEEP (10 here): the oldest go first', async () => {
    // A return path whose mail does not exist (deleted long ago): valid, so the listener takes it, but unmatched.
    const returnPath = await returnPathOf(987_654_321);
    const subjects: string[] = [];
    for (let i = 0; i < 15; i++) {
      const raw = hardBounce(returnPath, 'nobody@example.net', `550 unknown ${i}`).replace(
        'Subject: Undelivered Mail Returned to Sender',
        `Subject: unmatched ${i}`,
      );
      subjects.push(`unmatched ${i}`);
      expect((await sendSmtp(bouncePort, { from: '', to: [returnPath], raw })).last).toMatch(/^250 OK: report \d+ kept/);
    }
    const kept = await api<{ data: BounceReport[] }>('GET', '/api/v1/bounces?matched=false&limit=100');
    expect(kept.body.data.map((r) => r.summary.subject)).toEqual(subjects.slice(5).reverse());
  }, 60_000);
});

describe("a mail's reports, events and webhook deliveries", () => {
  it('are read in pages (limit, cursor, meta.nextCursor); the detail carries the first ones and the cursors on', async () => {
    const id = await sentMail('slow@example.net');
    const returnPath = await returnPathOf(id);
    // A webhook endpoint, so each application event of the mail makes a delivery (mail.queued and mail.sent came
    // before it existed, so only later ones count).
    const endpoint = await outbox.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: { authorization: `Token ${token}`, 'content-type': 'application/json' },
      payload: { url: 'http://127.0.0.1:9/hook', eventTypes: ['mail.bounced', 'mail.complained'] },
    });
    expect(endpoint.statusCode).toBe(201);
    // Five delayed reports (each kept, each an event), then the hard bounce (kept, an event, a delivery).
    for (let i = 0; i < 5; i++) {
      const raw = dsn({
        returnPath,
        recipients: [{ address: 'slow@example.net', action: 'delayed', status: '4.4.1', diagnostic: `try ${i}` }],
      });
      expect((await sendSmtp(bouncePort, { from: '', to: [returnPath], raw })).last).toMatch(/^250 OK: report \d+ kept/);
    }
    expect(
      (await sendSmtp(bouncePort, { from: '', to: [returnPath], raw: hardBounce(returnPath, 'slow@example.net', '550 gone') })).last,
    ).toMatch(/^250 OK: report \d+ kept/);

    const pages = async <T>(url: string, limit: number): Promise<{ items: T[]; pages: number }> => {
      const items: T[] = [];
      let cursor: string | null = null;
      let count = 0;
      do {
        const separator = url.includes('?') ? '&' : '?';
        const answer: { status: number; body: { data: T[]; meta: { nextCursor: string | null } } } = await api(
          'GET',
          `${url}${separator}limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
        );
        expect(answer.status).toBe(200);
        expect(answer.body.data.length).toBeLessThanOrEqual(limit);
        items.push(...answer.body.data);
        cursor = answer.body.meta.nextCursor;
        count += 1;
      } while (cursor !== null && count < 100);
      return { items, pages: count };
    };
    const reports = await pages<BounceReport>(`/api/v1/mail/${id}/bounces`, 2);
    expect(reports.pages).toBe(3);
    expect(reports.items.map((r) => r.summary.applied[0]!.outcome)).toEqual([
      'delayed',
      'delayed',
      'delayed',
      'delayed',
      'delayed',
      'bounced',
    ]);
    const events = await pages<{ type: string }>(`/api/v1/mail/${id}/events`, 3);
    expect(events.items.map((e) => e.type).slice(-6)).toEqual([...Array<string>(5).fill('bounce-delayed'), 'bounced']);
    expect(events.pages).toBe(Math.ceil(events.items.length / 3));
    // The detail carries them all here (fewer than its caps), and no cursor.
    const detail = await api<{ data: Array<{ events: unknown[]; bounces: unknown[] }>; meta: unknown }>('GET', `/api/v1/mail/${id}`);
    expect(detail.body.data[0]!.events).toEqual(events.items);
    expect(detail.body.data[0]!.bounces).toHaveLength(6);
    expect(detail.body.meta).toEqual({ eventsNextCursor: null, bouncesNextCursor: null });

    await waitUntil(async () => (await api<{ data: unknown[] }>('GET', `/api/v1/mail/${id}/webhook-deliveries`)).body.data.length === 1, {
      what: 'the mail.bounced delivery',
    });
    const deliveries = await api<{ data: Array<{ eventType: string }>; meta: { nextCursor: string | null } }>(
      'GET',
      `/api/v1/mail/${id}/webhook-deliveries?limit=1`,
    );
    expect(deliveries.body).toMatchObject({ data: [{ eventType: 'mail.bounced' }], meta: { nextCursor: null } });

    // Bad paging is refused by name, and loses nothing.
    for (const url of [
      `/api/v1/mail/${id}/events?limit=501`,
      `/api/v1/mail/${id}/bounces?limit=0`,
      `/api/v1/mail/${id}/webhook-deliveries?limit=201`,
    ]) {
      const refused = await api<{ error: { code: string; message: string } }>('GET', url);
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(/limit/);
    }
    for (const path of ['events', 'bounces', 'webhook-deliveries']) {
      const refused = await api<{ error: { code: string } }>('GET', `/api/v1/mail/${id}/${path}?cursor=nonsense`);
      expect(refused).toMatchObject({ status: 400, body: { error: { code: 'invalid_cursor' } } });
    }
    // The application that sent the mail reads them too; another application gets 404, as for the detail.
    const other = await outbox.services.auth.createApiKey('other-shop');
    for (const path of ['events', 'bounces']) {
      const asKey = async (key: string) =>
        (await outbox.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/${path}`, headers: { authorization: `Token ${key}` } }))
          .statusCode;
      expect(await asKey(apiKey)).toBe(200);
      expect(await asKey(other)).toBe(404);
    }
    expect((await api<{ error: { code: string } }>('GET', '/api/v1/mail/99999999/events')).body.error.code).toBe('mail_not_found');
    expect((await api<{ error: { code: string } }>('GET', '/api/v1/mail/99999999/bounces')).body.error.code).toBe('mail_not_found');
    await api('DELETE', `/api/v1/webhooks/${(endpoint.json() as { data: Array<{ id: number }> }).data[0]!.id}`);
  }, 60_000);
});

describe('a mail with more events and reports than its detail carries', () => {
  it('the detail carries the first 200 events and 50 reports, and its meta cursors read on to the last', async () => {
    const recipients = Array.from({ length: 210 }, (_, i) => `r${i}@example.net`);
    const response = await outbox.app.inject({
      method: 'POST',
      url: '/api/v1/mail',
      headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/json' },
      payload: { fromMail: 'shop@example.com', to: recipients.map((recipientMail) => ({ recipientMail })), subject: 'To many', text: 'Hi' },
    });
    expect(response.statusCode).toBe(202);
    const id = (response.json() as { data: Array<{ id: number }> }).data[0]!.id;
    await waitUntil(
      async () =>
        (await db().selectFrom('mails').select('status').where('id', '=', id).executeTakeFirst())?.status === MailStatus.ProviderSent,
      { what: `mail ${id} ProviderSent` },
    );
    // One hard bounce per recipient, each to its own return path: each moves its recipient, so each is kept and is an event.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < recipients.length) {
          const place = next++;
          const address = recipients[place]!;
          const returnPath = await returnPathOf(id, place);
          const answer = await sendSmtp(bouncePort, {
            from: '',
            to: [returnPath],
            raw: hardBounce(returnPath, address, `550 ${address} unknown`),
          });
          expect(answer.last).toMatch(/^250 OK: report \d+ kept/);
        }
      }),
    );
    const allEvents = await db().selectFrom('mail_events').select('id').where('mail_id', '=', id).execute();
    expect(allEvents.length).toBeGreaterThan(210);

    const detail = await api<{
      data: Array<{ status: number; events: Array<{ type: string }>; bounces: BounceReport[] }>;
      meta: { eventsNextCursor: string | null; bouncesNextCursor: string | null };
    }>('GET', `/api/v1/mail/${id}`);
    const shown = detail.body.data[0]!;
    expect(shown.status).toBe(MailStatus.ProviderError);
    expect(shown.events).toHaveLength(200);
    expect(shown.bounces).toHaveLength(50);
    expect(detail.body.meta.eventsNextCursor).not.toBeNull();
    expect(detail.body.meta.bouncesNextCursor).not.toBeNull();

    const readOn = async <T>(path: string, cursor: string): Promise<T[]> => {
      const items: T[] = [];
      for (let next: string | null = cursor, pages = 0; next !== null && pages < 20; pages++) {
        const page: { body: { data: T[]; meta: { nextCursor: string | null } } } = await api(
          'GET',
          `/api/v1/mail/${id}/${path}?limit=100&cursor=${encodeURIComponent(next)}`,
        );
        items.push(...page.body.data);
        next = page.body.meta.nextCursor;
      }
      return items;
    };
    const moreEvents = await readOn<{ type: string }>('events', detail.body.meta.eventsNextCursor!);
    expect(shown.events.length + moreEvents.length).toBe(allEvents.length);
    expect([...shown.events, ...moreEvents].filter((e) => e.type === 'bounced')).toHaveLength(210);
    const moreReports = await readOn<BounceReport>('bounces', detail.body.meta.bouncesNextCursor!);
    const ids = [...shown.bounces, ...moreReports].map((r) => r.id);
    expect(ids).toHaveLength(210);
    expect(new Set(ids).size).toBe(210);
  }, 120_000);
});

describe('reports go', () => {
  it('with their mail (delete, retention purge) and, matched or not, once older than RETENTION_DAYS', async () => {
    const deleted = await sentMail('deleted@example.net');
    const purged = await sentMail('purged@example.net');
    for (const id of [deleted, purged]) {
      const returnPath = await returnPathOf(id);
      const address = id === deleted ? 'deleted@example.net' : 'purged@example.net';
      expect((await sendSmtp(bouncePort, { from: '', to: [returnPath], raw: hardBounce(returnPath, address, '550 gone') })).last).toMatch(
        /^250 /,
      );
      expect((await countsOfMail(id)).reports).toBe(1);
    }
    // The operator deletes a mail: its reports go with it.
    expect((await api('DELETE', `/api/v1/mail/${deleted}`)).status).toBe(200);
    expect((await countsOfMail(deleted)).reports).toBe(0);

    // An unmatched report, which will be old.
    const stale = await returnPathOf(987_654_323);
    const staleRaw = hardBounce(stale, 'nobody@example.net', '550 unknown, old');
    expect((await sendSmtp(bouncePort, { from: '', to: [stale], raw: staleRaw })).last).toMatch(/^250 OK: report \d+ kept/);

    // 31 days later (RETENTION_DAYS is 30): a new unmatched report comes, then the purge runs.
    offsetMs += 31 * DAY_MS;
    const returnPath = await returnPathOf(987_654_322);
    const raw = hardBounce(returnPath, 'nobody@example.net', '550 unknown, recent');
    expect((await sendSmtp(bouncePort, { from: '', to: [returnPath], raw })).last).toMatch(/^250 /);
    const recent = await db()
      .selectFrom('bounce_reports')
      .select('id')
      .where('mail_id', 'is', null)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();

    expect(await outbox.services.mails.purgeFinishedMails(30, 'retention')).toBeGreaterThanOrEqual(1);
    expect(await outbox.services.bounces.purgeReports(30)).toBeGreaterThanOrEqual(1);
    expect(await db().selectFrom('mails').select('id').where('id', '=', purged).executeTakeFirst()).toBeUndefined();
    // Nothing older than 30 days is left, of any mail or of none; the recent unmatched report stays.
    const left = await db().selectFrom('bounce_reports').select(['id', 'mail_id', 'received_at']).execute();
    expect(left.map((r) => Number(r.id))).toEqual([Number(recent.id)]);
  }, 60_000);
});
