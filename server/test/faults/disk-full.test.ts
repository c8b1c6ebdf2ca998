/**
 * The embedded store runs out of space (docs/operations.md: a full disk must not lose what was acknowledged). The
 * test caps the SQLite file with `PRAGMA max_page_count` on the running server's own connection, which makes
 * SQLite fail every write that needs a new page with SQLITE_FULL, exactly as a full filesystem does, without
 * filling a real disk on a machine others share. While full: JSON intake answers 507 and SMTP intake 452, both
 * with a message that says what to do; the console still lists; the worker still records the outcome of mails
 * that were queued before. After the cap is lifted (space returns), every mail acknowledged before is there
 * with its message, and intake takes mail again.
 *
 * SQLite half only: max_page_count is SQLite's; a PostgreSQL server with a full disk is the database
 * administrator's alarm (the server itself stops accepting writes) and needs a small tablespace filesystem
 * this test cannot mount.
 */
import fs from 'node:fs';
import { MailStatus } from '@outbox/contract';
import { sql } from 'kysely';
import nodemailer from 'nodemailer';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { openStore } from '../../src/store/connection.js';
import { INTAKE_RESERVE_BYTES } from '../../src/store/space-reserve.js';
import { makeTempDir, testEngine } from '../support/context.js';
import { freePort, waitUntil } from '../support/net.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let environment: OutboxEnvironment | undefined;
let running: RunningOutbox | undefined;
let relay: TestRelay | undefined;

afterEach(async () => {
  await running?.stop();
  running = undefined;
  await relay?.close();
  relay = undefined;
  await environment?.dispose();
  environment = undefined;
});

/** The test hook: caps (or, with no argument, uncaps) the file size on the server's one SQLite connection. */
async function capStore(outbox: RunningOutbox, pages?: number): Promise<number> {
  const target = pages ?? 1_073_741_823; // SQLite's default maximum
  const result = await sql<{ max_page_count: number }>`pragma max_page_count = ${sql.raw(String(target))}`.execute(outbox.store.db);
  return result.rows[0]!.max_page_count;
}

async function pageCount(outbox: RunningOutbox): Promise<number> {
  return (await sql<{ page_count: number }>`pragma page_count`.execute(outbox.store.db)).rows[0]!.page_count;
}

describe.runIf(testEngine === 'sqlite')('the embedded store runs out of space', () => {
  it('intake refuses with 507 / 452, the console lists, delivery records outcomes, nothing acknowledged is lost', async () => {
    relay = await startTestRelay();
    const smtpPort = await freePort();
    environment = await freshEnvironment({ RELAY_URL: relay.url, SMTP_PORT: String(smtpPort), WORKER_CONCURRENCY: '4' });
    running = await startInProcess(environment.env);
    const outbox = running;
    const apiKey = await outbox.services.auth.createApiKey('shop');
    const login = await outbox.app.inject({
      method: 'POST',
      url: '/api/v1/login',
      payload: { username: 'ops', password: 'correct horse battery' },
    });
    const operator = { authorization: `Token ${(login.json() as { data: Array<{ token: string }> }).data[0]!.token}` };
    const submit = (subject: string, text: string) =>
      outbox.app.inject({
        method: 'POST',
        url: '/api/v1/mail',
        headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/json' },
        payload: { fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject, text },
      });

    const acknowledged: number[] = [];
    for (let i = 0; i < 20; i++) {
      const response = await submit(`before ${i}`, `body ${i} `.repeat(200));
      expect(response.statusCode).toBe(202);
      acknowledged.push((response.json() as { data: Array<{ id: number }> }).data[0]!.id);
    }
    await waitUntil(() => relay!.received.length === 20, { timeoutMs: 30_000, what: 'the first 20 mails at the relay' });
    // A slow provider from here on: the mails below are still queued or in flight when the store fills.
    relay.delayMs = 500;

    // Room for a few dozen more mails above the reserve, then full for intake.
    const pageSize = (await sql<{ page_size: number }>`pragma page_size`.execute(outbox.store.db)).rows[0]!.page_size;
    await capStore(outbox, (await pageCount(outbox)) + INTAKE_RESERVE_BYTES / pageSize + 100);
    const refused: Array<{ statusCode: number; body: string }> = [];
    for (let i = 0; i < 400 && refused.length === 0; i++) {
      const response = await submit(`filling ${i}`, `filler ${i} `.repeat(500));
      if (response.statusCode === 202) acknowledged.push((response.json() as { data: Array<{ id: number }> }).data[0]!.id);
      else refused.push({ statusCode: response.statusCode, body: response.body });
    }
    expect(refused[0]).toBeDefined();
    expect(refused[0]!.statusCode).toBe(507);
    expect(JSON.parse(refused[0]!.body)).toEqual({
      error: {
        code: 'store_full',
        message: expect.stringMatching(
          /^The mail store is full: less than 32 MiB is left.*Nothing was changed; free disk space, then try again\.$/,
        ),
      },
    });
    // Still full: a second submission is refused the same way, not half stored.
    expect((await submit('still full', 'y'.repeat(50_000))).statusCode).toBe(507);

    // SMTP intake: a temporary refusal that says why (452 = insufficient system storage), so the client retries.
    const client = nodemailer.createTransport({
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      ignoreTLS: true,
      auth: { user: 'shop', pass: apiKey },
    });
    const smtpError = await client
      .sendMail({
        envelope: { from: 'shop@example.com', to: ['ann@example.net'] },
        raw: `From: shop@example.com\r\nTo: ann@example.net\r\nSubject: over smtp while full\r\n\r\n${'z'.repeat(60_000)}\r\n`,
      })
      .then(
        () => undefined,
        (error: { responseCode?: number; response?: string }) => error,
      );
    client.close();
    expect(smtpError?.responseCode).toBe(452);
    expect(smtpError?.response).toMatch(/^452 4\.3\.1 .*storage/i);

    // The console still lists, with the counts of what is stored.
    const list = await outbox.app.inject({ method: 'GET', url: '/api/v1/mail/list?limit=50', headers: operator });
    expect(list.statusCode).toBe(200);
    const listed = list.json() as { data: Array<{ id: number }>; meta: { total: number } };
    expect(listed.meta.total).toBe(acknowledged.length);

    // Delivery goes on while the store is full: every queued mail is sent and its outcome recorded.
    const queuedWhenFull = acknowledged.length - relay.received.length;
    expect(queuedWhenFull).toBeGreaterThan(0);
    relay.delayMs = 0;
    await waitUntil(
      async () => {
        const counts = await outbox.app.inject({
          method: 'GET',
          url: `/api/v1/mail/list?limit=1&status=${MailStatus.ProviderSent}`,
          headers: operator,
        });
        return (counts.json() as { meta: { total: number } }).meta.total === acknowledged.length;
      },
      { timeoutMs: 30_000, what: 'every acknowledged mail ProviderSent while the store is full' },
    );
    expect((await submit('full after delivery', 'y'.repeat(50_000))).statusCode).toBe(507);

    // Space returns: everything acknowledged is intact, and intake takes mail again within a moment.
    await capStore(outbox);
    let again = await submit('after space returned', 'hello again');
    for (let i = 0; i < 40 && again.statusCode === 507; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      again = await submit('after space returned', 'hello again');
    }
    expect(again.statusCode).toBe(202);
    for (const id of acknowledged) {
      const detail = await outbox.app.inject({ method: 'GET', url: `/api/v1/mail/${id}`, headers: operator });
      expect(detail.statusCode).toBe(200);
      expect((detail.json() as { data: Array<{ status: number }> }).data[0]!.status).toBe(MailStatus.ProviderSent);
      const raw = await outbox.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/raw`, headers: operator });
      expect(raw.statusCode).toBe(200);
    }
    const integrity = await sql<{ quick_check: string }>`pragma quick_check`.execute(outbox.store.db);
    expect(integrity.rows).toEqual([{ quick_check: 'ok' }]);
  }, 120_000);

  it('a transaction that fills the store fails with SQLITE_FULL (so 507), not with the ROLLBACK that follows it', async () => {
    const dataDir = makeTempDir('outbox-full-');
    const store = await openStore({ dataDir });
    try {
      const pages = (await sql<{ page_count: number }>`pragma page_count`.execute(store.db)).rows[0]!.page_count;
      await sql`pragma max_page_count = ${sql.raw(String(pages))}`.execute(store.db);
      // SQLite rolls the transaction back by itself on SQLITE_FULL; Kysely's own ROLLBACK then used to fail
      // with "cannot rollback - no transaction is active" and hide the real error, which became a 500.
      const failure = await store.db
        .transaction()
        .execute(async (trx) => {
          await trx
            .insertInto('audit_log')
            .values({ at: 0, actor: 'test', action: 'fill', target: null, before_json: null, after_json: 'x'.repeat(500_000) })
            .execute();
        })
        .then(
          () => undefined,
          (error: unknown) => error as { code?: string },
        );
      expect(failure?.code).toBe('SQLITE_FULL');
      // The connection is usable afterwards: reads work, and writes again once there is room.
      await sql`pragma max_page_count = 1073741823`.execute(store.db);
      await store.db
        .insertInto('audit_log')
        .values({ at: 0, actor: 'test', action: 'after', target: null, before_json: null, after_json: null })
        .execute();
    } finally {
      await store.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
