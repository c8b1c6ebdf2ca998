/**
 * Content retention (docs/operations.md#content-retention), from the outside: mails delivered by the
 * real worker to a real SMTP peer, the purge that main.ts runs every minute, and what the API then answers (the
 * detail, the raw message, a requeue, a bulk requeue). CONTENT_RETENTION_DAYS is 7 here, RETENTION_DAYS 30; the
 * application "private" keeps no content (0), "app" follows the default.
 */
import { MailStatus, type BulkResult, type MailDetail } from '@outbox/contract';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/auth/auth.service.js';
import { createContentRetention, type ContentRetention } from '../../src/mail/content-retention.js';
import { mailImportWriter } from '../../src/mail/write/import.js';
import { exportStore, importStore } from '../../src/store/transfer.js';
import { cli } from '../support/cli.js';
import { auth, loginAs, makeTempDir, openTestStore, testEngine, type TestContext } from '../support/context.js';
import { freshEnvironment, type OutboxEnvironment } from '../support/outbox-process.js';
import type { TestRelay } from '../support/test-relay.js';
import { createWorkerHarness, type WorkerHarness } from '../support/worker-harness.js';

const DAY = 86_400_000;

/** Days on: the clock moves and the operator logs in again (a session lasts an hour here). */
async function advanceDays(days: number): Promise<void> {
  context.clock.advance(days * DAY);
  token = await loginAs(context);
}

let harness: WorkerHarness;
let context: TestContext;
let relay: TestRelay;
let app: ApiKeyPrincipal;
let privateApp: ApiKeyPrincipal;
let privateKey: string;
let retention: ContentRetention;
let token: string;

beforeEach(async () => {
  harness = await createWorkerHarness();
  ({ context, relay } = harness);
  app = harness.principal;
  privateKey = await context.services.auth.createApiKey('private');
  privateApp = (await context.services.auth.findApiKeyPrincipal(privateKey))!;
  // What main.ts builds from CONTENT_RETENTION_DAYS=7 and RETENTION_DAYS=30.
  retention = createContentRetention({ store: context.store, clock: context.clock, defaultDays: 7, retentionDays: 30 });
  await retention.setApplicationContentRetention({ name: 'private' }, 0, 'operator:ops');
  token = await loginAs(context);
  // Refused for good at DATA: a ProviderError that an operator could requeue.
  relay.answer = (message) =>
    message.rcptTo.some((to) => to.startsWith('refuse')) ? { code: 550, message: 'no such user' } : { accept: true };
});

afterEach(async () => {
  await harness.close();
});

/** A mail with a text and an HTML body and an attachment, as an application hands it over SMTP. */
async function submit(principal: ApiKeyPrincipal, recipient = 'ann@example.net'): Promise<number> {
  const messageId = `<${Math.random().toString(36).slice(2)}@example.com>`;
  const raw = Buffer.from(
    [
      'From: shop@example.com',
      `To: Ann <${recipient}>`,
      'Subject: Your order',
      `Message-ID: ${messageId}`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: multipart/alternative; boundary="b2"',
      '',
      '--b2',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'The secret body',
      '--b2',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<p>The secret body</p>',
      '--b2--',
      '--b1',
      'Content-Type: text/plain; name="invoice.txt"',
      'Content-Disposition: attachment; filename="invoice.txt"',
      '',
      'invoice 42',
      '--b1--',
      '',
    ].join('\r\n'),
  );
  const mail = await context.services.submissions.submitRaw(principal, {
    envelopeFrom: 'shop@example.com',
    envelopeTo: [recipient],
    raw,
    messageId,
  });
  return mail.id;
}

const get = (url: string, bearer = `Token ${token}`) => context.app.inject({ method: 'GET', url, headers: { authorization: bearer } });

async function detail(id: number): Promise<MailDetail> {
  const response = await get(`/api/v1/mail/${id}`);
  expect(response.statusCode).toBe(200);
  return (response.json() as { data: [MailDetail] }).data[0];
}

async function waitForStatus(id: number, status: number): Promise<void> {
  await expect.poll(async () => (await context.services.mails.getMailDetail(id)).status, { timeout: 15_000, interval: 20 }).toBe(status);
}

/** Mails delivered (and one refused) by the real worker, then the worker stopped: nothing moves while a test looks. */
async function deliver(ids: Array<{ id: number; status: number }>): Promise<void> {
  const worker = harness.startWorker();
  for (const { id, status } of ids) await waitForStatus(id, status);
  await worker.stop({ graceMs: 0 });
}

describe('content retention', () => {
  it("removes a delivered mail's raw message, bodies and attachments past its application's retention, and keeps its record and events", async () => {
    const privateMail = await submit(privateApp);
    const appMail = await submit(app);
    await deliver([
      { id: privateMail, status: MailStatus.ProviderSent },
      { id: appMail, status: MailStatus.ProviderSent },
    ]);
    const before = await detail(privateMail);
    expect(before.contentRemovedAt).toBeNull();
    expect(before.text).toBe('The secret body');
    expect(before.attachments).toHaveLength(1);

    // "private" keeps nothing: its mail loses its content at the first purge after its outcome; "app" keeps 7 days.
    context.clock.advance(1);
    expect(await retention.purgeMailContents()).toBe(1);
    const removedAt = new Date(context.clock.now()).toISOString();
    const after = await detail(privateMail);
    expect(after).toMatchObject({
      contentRemovedAt: removedAt,
      text: null,
      html: null,
      headers: [],
      attachments: [],
      // The metadata stays: sender, recipients, subject, status, dates, attempts, reply, size.
      id: privateMail,
      fromMail: 'shop@example.com',
      to: [{ recipientName: 'Ann', recipientMail: 'ann@example.net' }],
      subject: 'Your order',
      status: MailStatus.ProviderSent,
      providerSentDate: before.providerSentDate,
      receivedDate: before.receivedDate,
      lastUpdate: before.lastUpdate,
      attempts: 1,
      providerReply: before.providerReply,
      messageId: before.messageId,
      envelopeFrom: before.envelopeFrom,
      sizeBytes: before.sizeBytes,
      recipients: before.recipients,
    });
    expect(after.events).toEqual(before.events);
    expect(after.events.map((e) => e.type)).toEqual(['accepted', 'sent']);
    // Nothing left in the store either.
    const stored = await context.store.db
      .selectFrom('mail_contents')
      .selectAll()
      .where('mail_id', '=', privateMail)
      .executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ raw: null, text_body: null, html_body: null, headers_json: null });
    expect((await detail(appMail)).text).toBe('The secret body');

    // The raw message: 410 with a code, for the operator and for the application alike.
    const raw = await get(`/api/v1/mail/${privateMail}/raw`);
    expect(raw.statusCode).toBe(410);
    expect(raw.json()).toEqual({
      error: { code: 'content_removed', message: expect.stringContaining(`Mail ${privateMail}'s content was removed on ${removedAt}`) },
    });
    expect((await get(`/api/v1/mail/${privateMail}/raw`, `Token ${privateKey}`)).statusCode).toBe(410);
    expect((await get(`/api/v1/mail/${appMail}/raw`)).statusCode).toBe(200);

    // Seven days on, "app"'s mail goes the same way; "private"'s is not touched twice (its time stays).
    await advanceDays(7);
    expect(await retention.purgeMailContents()).toBe(1);
    expect((await detail(appMail)).contentRemovedAt).toBe(new Date(context.clock.now()).toISOString());
    expect((await detail(privateMail)).contentRemovedAt).toBe(removedAt);
    expect(await retention.purgeMailContents()).toBe(0);

    // Each run that removed content is in the audit log; so is the change of "private"'s retention.
    const audit = await context.store.db.selectFrom('audit_log').select(['action', 'target', 'after_json']).orderBy('id').execute();
    expect(audit.filter((a) => a.action === 'mail.content.purge').map((a) => [a.target, JSON.parse(a.after_json!)])).toEqual([
      ['1 mails', { removedByContentRetentionDays: { 0: 1 } }],
      ['1 mails', { removedByContentRetentionDays: { 7: 1 } }],
    ]);
    expect(audit.find((a) => a.action === 'apikey.content-retention')).toMatchObject({ target: 'apikey:private' });
  });

  it('leaves Queued and Dequeued mails alone, and the default of RETENTION_DAYS to the record purge', async () => {
    const waiting = await submit(privateApp);
    const parked = await submit(privateApp);
    expect((await context.app.inject({ method: 'POST', url: `/api/v1/mail/${parked}/dequeue`, headers: auth(token) })).statusCode).toBe(
      200,
    );
    await advanceDays(40);
    expect(await retention.purgeMailContents()).toBe(0);
    expect((await detail(waiting)).text).toBe('The secret body');
    expect((await detail(parked)).contentRemovedAt).toBeNull();

    // With every application at RETENTION_DAYS the purge has nothing to do: the record's purge takes the content.
    await retention.setApplicationContentRetention({ name: 'private' }, null, 'operator:ops');
    const atRetention = createContentRetention({ store: context.store, clock: context.clock, defaultDays: 30, retentionDays: 30 });
    await deliver([{ id: waiting, status: MailStatus.ProviderSent }]);
    await advanceDays(29);
    expect(await atRetention.purgeMailContents()).toBe(0);
    expect((await detail(waiting)).contentRemovedAt).toBeNull();
    // The 7-day default of the other instance applies now that "private" follows it again; the Dequeued mail stays.
    expect(await retention.purgeMailContents()).toBe(1);
    expect((await detail(waiting)).contentRemovedAt).not.toBeNull();
    expect((await detail(parked)).contentRemovedAt).toBeNull();
  });

  it('refuses to requeue a mail without content (409 content_removed) and a bulk requeue skips it with that reason', async () => {
    const refusedPrivate = await submit(privateApp, 'refuse@example.net');
    const refusedApp = await submit(app, 'refuse@example.net');
    await deliver([
      { id: refusedPrivate, status: MailStatus.ProviderError },
      { id: refusedApp, status: MailStatus.ProviderError },
    ]);
    context.clock.advance(1);
    expect(await retention.purgeMailContents()).toBe(1);

    const requeue = await context.app.inject({ method: 'POST', url: `/api/v1/mail/${refusedPrivate}/requeue`, headers: auth(token) });
    expect(requeue.statusCode).toBe(409);
    expect(requeue.json()).toEqual({
      error: {
        code: 'content_removed',
        message: expect.stringMatching(
          new RegExp(`^Mail ${refusedPrivate} cannot be requeued: its content .* was removed on .*Submit it again`),
        ),
      },
    });
    expect((await detail(refusedPrivate)).status).toBe(MailStatus.ProviderError);

    const bulk = async (payload: unknown): Promise<BulkResult> => {
      const response = await context.app.inject({
        method: 'POST',
        url: '/api/v1/mail/bulk',
        headers: auth(token),
        payload: JSON.stringify(payload),
      });
      expect(response.statusCode).toBe(200);
      return (response.json() as { data: [BulkResult] }).data[0];
    };
    // The dry run says so before the confirmation, and the action does what it said.
    const preview = await bulk({ action: 'requeue', ids: [refusedPrivate, refusedApp], dryRun: true });
    expect(preview).toMatchObject({ done: 1, skipped: [{ reason: 'content_removed', count: 1, ids: [refusedPrivate] }] });
    expect(await bulk({ action: 'requeue', ids: [refusedPrivate, refusedApp] })).toEqual({
      action: 'requeue',
      done: 1,
      skipped: [{ reason: 'content_removed', count: 1, ids: [refusedPrivate] }],
    });
    expect((await detail(refusedApp)).status).toBe(MailStatus.Queued);
    expect((await detail(refusedPrivate)).status).toBe(MailStatus.ProviderError);
    // A filter requeue walks the same way.
    const byFilter = await bulk({ action: 'requeue', filter: { status: '4' }, expectedCount: 1 });
    expect(byFilter).toMatchObject({ done: 0, skipped: [{ reason: 'content_removed', count: 1 }] });
    // Deleting it stays allowed.
    expect((await context.app.inject({ method: 'DELETE', url: `/api/v1/mail/${refusedPrivate}`, headers: auth(token) })).statusCode).toBe(
      200,
    );
  });

  it("an application's retention: 0 to RETENTION_DAYS or null for the default, 400 otherwise, 404 for an unknown key", async () => {
    expect(await retention.getApplicationContentRetention({ name: 'app' })).toEqual({
      id: app.id,
      name: 'app',
      contentRetentionDays: null,
      effectiveContentRetentionDays: 7,
    });
    expect(await retention.setApplicationContentRetention({ id: app.id }, 30, 'operator:ops')).toMatchObject({
      contentRetentionDays: 30,
      effectiveContentRetentionDays: 30,
    });
    for (const bad of [31, -1, 1.5])
      await expect(retention.setApplicationContentRetention({ name: 'app' }, bad, 'operator:ops')).rejects.toMatchObject({
        statusCode: 400,
        code: 'invalid_content_retention',
        message: expect.stringContaining('contentRetentionDays must be a whole number of days from 0 to 30'),
      });
    await expect(retention.setApplicationContentRetention({ name: 'nobody' }, 1, 'operator:ops')).rejects.toMatchObject({
      statusCode: 404,
      code: 'api_key_not_found',
    });
  });

  it('the purge reads one index range per application: migration 025 partial index', async () => {
    if (testEngine === 'sqlite') {
      // INDEXED BY fails the statement when the index cannot serve it, so a run at all is the proof.
      expect(await retention.purgeMailContents()).toBe(0);
      return;
    }
    const plan = await context.store.db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx);
      const { rows } = await sql<{ 'QUERY PLAN': string }>`explain select id from mails
        where content_removed_at is null and status in (3, 4, 5) and api_key_id in (1, 2) and last_update_at < 1000 limit 500`.execute(trx);
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('mails_content_pending_idx');
  });

  it("export and import carry the removal time and the applications' own retention", async () => {
    const mail = await submit(privateApp);
    await deliver([{ id: mail, status: MailStatus.ProviderSent }]);
    context.clock.advance(1);
    await retention.purgeMailContents();
    const lines: string[] = [];
    await exportStore(context.store, async (line) => {
      lines.push(line);
    });
    const target = await openTestStore(makeTempDir());
    try {
      await importStore(
        target.store,
        {
          async *[Symbol.asyncIterator]() {
            yield* lines;
          },
        },
        mailImportWriter,
      );
      const row = await target.store.db.selectFrom('mails').select('content_removed_at').where('id', '=', mail).executeTakeFirstOrThrow();
      expect(Number(row.content_removed_at)).toBe(context.clock.now());
      const key = await target.store.db
        .selectFrom('api_keys')
        .select('content_retention_days')
        .where('name', '=', 'private')
        .executeTakeFirstOrThrow();
      expect(key.content_retention_days).toBe(0);
    } finally {
      await target.dispose();
    }
  });
});

describe('npm run outbox -- apikey content-retention', () => {
  let environment: OutboxEnvironment | undefined;
  afterEach(async () => {
    await environment?.dispose();
    environment = undefined;
  });

  it('sets days, returns to the default, and refuses what is not a number of days', async () => {
    environment = await freshEnvironment({ CONTENT_RETENTION_DAYS: '7', RETENTION_DAYS: '30' });
    expect((await cli(['apikey', 'create', 'shop'], environment.env)).code).toBe(0);
    expect(await cli(['apikey', 'content-retention', 'shop', '0'], environment.env)).toMatchObject({
      code: 0,
      stdout: 'API key shop: the content of its final mails is kept 0 days (removed within a minute of the outcome by a running server).\n',
    });
    expect(await cli(['apikey', 'content-retention', 'shop', 'default'], environment.env)).toMatchObject({
      code: 0,
      stdout: 'API key shop follows CONTENT_RETENTION_DAYS again: the content of its final mails is kept 7 days.\n',
    });
    expect(await cli(['apikey', 'content-retention', 'shop', 'soon'], environment.env)).toMatchObject({
      code: 1,
      stderr: 'apikey content-retention shop needs DAYS, a whole number of days (0 or more), or "default".\n',
    });
    expect(await cli(['apikey', 'content-retention', 'shop', '31'], environment.env)).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('contentRetentionDays must be a whole number of days from 0 to 30'),
    });
    expect(await cli(['apikey', 'content-retention', 'nobody', '3'], environment.env)).toMatchObject({
      code: 1,
      stderr: 'No API key is named "nobody".\n',
    });
  });
});
