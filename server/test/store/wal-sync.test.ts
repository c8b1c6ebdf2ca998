/**
 * SQLite commits with `synchronous = NORMAL` and a grouped fdatasync of the WAL off the event loop
 * (store/wal-sync.ts, docs/decisions.md): no 202 and no 250 leaves before the sync that covers its commit
 * has finished, one sync covers every commit that finished before it started, and a failed sync fails the
 * commits it covered and puts the connection back on FULL. SQLite's own case: this file is in the SQLite half
 * only (vitest.config.ts).
 */
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createWalDurability, fdatasyncFile, type WalSyncer } from '../../src/store/wal-sync.js';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';
import { startSmtpIntake, type SmtpIntake } from '../support/smtp-intake.js';
import { SmtpSession } from '../support/smtp-session.js';

/** A syncer the test holds back: while held, each sync waits for `release()`, then really syncs. */
function heldSyncer() {
  let holding = false;
  const waiting: Array<() => void> = [];
  let started = 0;
  const sync: WalSyncer = async (fd) => {
    started += 1;
    if (holding) await new Promise<void>((resolve) => waiting.push(resolve));
    await fdatasyncFile(fd);
  };
  return {
    sync,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const resolve of waiting.splice(0)) resolve();
    },
    get started() {
      return started;
    },
    get waiting() {
      return waiting.length;
    },
  };
}

const mail = (subject: string) => ({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ana@example.com' }], subject, text: 'Hello' });

/** Whether the promise settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  return settled;
}

let context: TestContext | undefined;
let smtp: SmtpIntake | undefined;

afterEach(async () => {
  await smtp?.close();
  await context?.close();
  smtp = undefined;
  context = undefined;
});

describe('durable commits on SQLite: the answer waits for the WAL sync', () => {
  it('answers a submission 202 only after the sync that covers its commit has finished', async () => {
    const syncer = heldSyncer();
    context = await createTestContext({ walSync: syncer.sync });
    const apiKey = await context.services.auth.createApiKey('app');
    syncer.hold();
    const answer = context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(apiKey), payload: mail('held') });
    expect(await settlesWithin(answer, 300)).toBe(false);
    expect(syncer.waiting).toBeGreaterThan(0);
    syncer.release();
    const response = await answer;
    expect(response.statusCode, response.body).toBe(202);
  });

  it('answers a message over SMTP 250 only after the sync that covers its commit has finished', async () => {
    const syncer = heldSyncer();
    context = await createTestContext({ walSync: syncer.sync });
    smtp = await startSmtpIntake(context, 'smtp');
    const session = await SmtpSession.open(smtp.port);
    try {
      expect(await session.reply()).toMatch(/^220 /);
      expect(await session.command('EHLO client.example')).toMatch(/^250/);
      expect(await session.command(`AUTH PLAIN ${Buffer.from(`\0app\0${smtp.apiKey}`).toString('base64')}`)).toMatch(/^235 /);
      expect(await session.command('MAIL FROM:<shop@example.com>')).toMatch(/^250 /);
      expect(await session.command('RCPT TO:<ana@example.com>')).toMatch(/^250 /);
      expect(await session.command('DATA')).toMatch(/^354 /);
      syncer.hold();
      session.write('From: shop@example.com\r\nTo: ana@example.com\r\nSubject: held\r\n\r\nHello\r\n.\r\n');
      expect(await session.nextReply(300)).toBeUndefined();
      expect(syncer.waiting).toBeGreaterThan(0);
      syncer.release();
      expect(await session.reply(10_000)).toMatch(/^250 .*queued as \d+/);
    } finally {
      session.destroy();
    }
  });

  it('lets the next commits run during a sync, covers them with the syncs after it, and holds a list page until then', async () => {
    const syncer = heldSyncer();
    context = await createTestContext({ walSync: syncer.sync });
    const apiKey = await context.services.auth.createApiKey('app');
    const operator = await loginAs(context);
    syncer.hold();
    const first = context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(apiKey), payload: mail('first') });
    expect(await settlesWithin(first, 200)).toBe(false);
    const before = syncer.started;
    // Committed while the first sync is held (the connection is free), answered only after a later sync.
    const later = Array.from({ length: 5 }, (_, i) =>
      context!.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(apiKey), payload: mail(`later ${i}`) }),
    );
    expect(await settlesWithin(Promise.race(later), 300)).toBe(false);
    // Another connection sees them committed; an answer built from reads (the list) waits for the sync.
    const other = new SqliteDatabase(context.store.file!, { readonly: true });
    const stored = (other.prepare(`select count(*) as n from mails where subject like 'later %'`).get() as { n: number }).n;
    other.close();
    expect(stored).toBeGreaterThan(0);
    const page = context.app.inject({ method: 'GET', url: '/api/v1/mail/list?limit=50', headers: auth(operator) });
    expect(await settlesWithin(page, 200)).toBe(false);
    syncer.release();
    const listed = await page;
    expect(listed.statusCode, listed.body).toBe(200);
    for (const response of await Promise.all([first, ...later])) expect(response.statusCode, response.body).toBe(202);
    // The five commits that finished during the first sync share the syncs after it, not one each.
    expect(syncer.started - before).toBeLessThan(5);
  });

  it('fails the commits a failed sync covered, then commits with SQLite’s own sync (FULL)', async () => {
    let fail = false;
    context = await createTestContext({
      walSync: async (fd) => {
        if (fail) {
          fail = false;
          throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
        }
        await fdatasyncFile(fd);
      },
    });
    const apiKey = await context.services.auth.createApiKey('app');
    fail = true;
    const failed = await context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(apiKey), payload: mail('lost') });
    expect(failed.statusCode).toBeGreaterThanOrEqual(500);
    const next = await context.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(apiKey), payload: mail('next') });
    expect(next.statusCode, next.body).toBe(202);
    const level = await sql<{ synchronous: number }>`pragma synchronous`.execute(context.store.db);
    expect(level.rows[0]!.synchronous).toBe(2);
  });
});

describe('createWalDurability', () => {
  it('starts one sync for the commits before it, and one more for those that finished during it', async () => {
    const releases: Array<() => void> = [];
    let syncs = 0;
    const wal = createWalDurability(-1, () => {
      syncs += 1;
      return new Promise((resolve) => releases.push(resolve));
    });
    wal.written();
    wal.written();
    const a = wal.durable();
    const b = wal.durable();
    expect(syncs).toBe(1);
    wal.written();
    const c = wal.durable();
    await Promise.resolve();
    expect(syncs).toBe(1);
    releases.shift()!();
    await Promise.all([a, b]);
    expect(await settlesWithin(c, 20)).toBe(false);
    expect(syncs).toBe(2);
    releases.shift()!();
    await c;
    // Nothing new committed: a read waits for nothing.
    await wal.durable();
    expect(syncs).toBe(2);
  });
});
