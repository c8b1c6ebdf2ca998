/**
 * A move between engines and back, from the outside in: an Outbox on SQLite sends mail, takes a bounce, keeps a
 * suppression list, a webhook endpoint with its deliveries and attempts, alert state and its audit log; its store
 * is exported, imported into PostgreSQL, exported again and imported into a new SQLite store. Every exported
 * table must come out the same at each step (row counts and a digest of the rows), and an Outbox started on the
 * final store must accept a bounce for a mail sent before the move (the return-path secret travelled with it).
 * Needs both engines, so it runs in the PostgreSQL half only (vitest.config.ts).
 */
import crypto from 'node:crypto';
import { MailStatus } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { mailImportWriter } from '../../src/mail/write/import.js';
import { openStore, type Store } from '../../src/store/connection.js';
import { EXPORTED_TABLES, exportStore, importStore } from '../../src/store/transfer.js';
import { dsn, sendSmtp, startBounceOutbox, type BounceOutbox } from '../bounces/bounce-support.js';
import { createTestDatabase, makeTempDir } from '../support/context.js';
import { seedMails } from '../support/mails.js';
import { freePort, waitUntil } from '../support/net.js';
import { startInProcess } from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let relay: TestRelay;
let source: BounceOutbox;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  relay = await startTestRelay();
  // DATABASE_URL '' keeps the first store on SQLite whatever the half.
  source = await startBounceOutbox({ RELAY_URL: relay.url, DATABASE_URL: '', WEBHOOK_ALLOW_PRIVATE: 'true' });
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await source?.stop();
  await relay?.close();
});

const call = async (running: RunningOutbox, token: string, method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) => {
  const response = await running.app.inject({
    method,
    url,
    headers: { authorization: `Token ${token}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
    ...(payload ? { payload: JSON.stringify(payload) } : {}),
  });
  return { status: response.statusCode, body: response.json() as Record<string, unknown> };
};

/** The envelope sender the relay saw for a mail's recipient: the return path, whatever its form. */
function returnPathSeen(messageIdOf: string, recipient: string): string {
  const relayed = relay.received.find((m) => m.messageId === messageIdOf && m.rcptTo.includes(recipient));
  if (!relayed) throw new Error(`the relay received no mail ${messageIdOf} for ${recipient}`);
  return relayed.mailFrom;
}

/** Per exported table: its row count and a SHA-256 of its rows in key order, as the export writes them. */
function digestOf(lines: string[]): Record<string, { rows: number; sha256: string }> {
  const byTable = new Map<string, string[]>();
  for (const line of lines.slice(1)) {
    const { table, row } = JSON.parse(line) as { table: string; row: unknown };
    byTable.set(table, [...(byTable.get(table) ?? []), JSON.stringify(row)]);
  }
  const digest: Record<string, { rows: number; sha256: string }> = {};
  for (const { name } of EXPORTED_TABLES) {
    const rows = byTable.get(name) ?? [];
    digest[name] = { rows: rows.length, sha256: crypto.createHash('sha256').update(rows.join('\n')).digest('hex') };
  }
  return digest;
}

async function exportLines(store: Store): Promise<string[]> {
  const lines: string[] = [];
  await exportStore(store, async (line) => {
    lines.push(line);
  });
  return lines;
}

const iterate = (lines: string[]): AsyncIterable<string> => ({
  async *[Symbol.asyncIterator]() {
    yield* lines;
  },
});

const statusCounts = (store: Store) => store.db.selectFrom('status_counts').select(['status', 'count']).orderBy('status').execute();

describe('export and import between engines', () => {
  it('SQLite → PostgreSQL → SQLite keeps every table, and the moved store accepts a bounce for a mail sent before', async () => {
    const { running, token } = source;

    // Mail sent, one of them bounced (a report, a suppression, events), one suppressed by hand.
    const keptId = await source.submit(['ann@example.net', 'bob@example.net']);
    const bouncedId = await source.submit(['gone@example.net']);
    await source.waitForStatus(keptId, MailStatus.ProviderSent);
    await source.waitForStatus(bouncedId, MailStatus.ProviderSent);
    const keptMessageId = (await source.detail(keptId)).messageId!;
    const bouncedReturnPath = returnPathSeen((await source.detail(bouncedId)).messageId!, 'gone@example.net');
    const hardBounce = await sendSmtp(source.bouncePort, {
      from: '',
      to: [bouncedReturnPath],
      raw: dsn({
        returnPath: bouncedReturnPath,
        recipients: [{ address: 'gone@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' }],
      }),
    });
    expect(hardBounce.last).toMatch(/^250 /);
    await source.waitForStatus(bouncedId, MailStatus.ProviderError);
    expect((await call(running, token, 'POST', '/api/v1/suppressions', { address: 'manual@example.net', note: 'asked us' })).status).toBe(
      201,
    );

    // A webhook endpoint (with its secret) whose deliveries fail against a closed port: deliveries and attempts.
    const endpoint = await call(running, token, 'POST', '/api/v1/webhooks', { url: `http://127.0.0.1:${await freePort()}/hook` });
    expect(endpoint.status).toBe(201);
    await source.submit(['carol@example.net']);
    await waitUntil(async () => (await running.store.db.selectFrom('webhook_attempts').select('id').limit(1).execute()).length > 0, {
      what: 'a webhook attempt logged',
    });

    // A mail waiting for its retry a year from now: a row of the queue (migration 022).
    await seedMails(running.store, [{ status: MailStatus.Queued }], Date.now());

    // Alert state as the evaluator writes it.
    await running.store.db
      .insertInto('alert_states')
      .values({
        rule: 'failure_rate',
        state: 'firing',
        since: 1,
        pending_since: 1,
        firing_since: 2,
        resolved_at: null,
        value: 0.5,
        threshold: 0.2,
        summary: 'Failure rate 50 %',
        evaluated_at: 3,
        firings: 1,
      })
      .onConflict((oc) => oc.column('rule').doNothing())
      .execute();
    await running.store.db
      .insertInto('alert_history')
      .values({
        rule: 'failure_rate',
        from_state: 'pending',
        to_state: 'firing',
        at: 2,
        value: 0.5,
        threshold: 0.2,
        summary: 'Failure rate 50 %',
      })
      .execute();

    await waitUntil(async () => (await source.detail(keptId)).status === MailStatus.ProviderSent, { what: 'kept mail settled' });

    // A named relay with a login (which stays behind: relay_credentials is not exported) and a route naming it.
    const relay = await call(running, token, 'POST', '/api/v1/relays', {
      name: 'eu',
      url: 'smtps://mailer:relay-secret@smtp.eu.example:465',
    });
    expect(relay.status).toBe(201);
    const routes = await call(running, token, 'PUT', '/api/v1/routes', {
      routes: [{ match: { recipientDomain: '*.eu' }, relays: ['eu', 'default'] }],
    });
    expect(routes.status).toBe(200);
    const sqliteDir = source.environment.dataDir;
    await running.stop();

    // 1. SQLite → export.
    const first = await openStore({ dataDir: sqliteDir });
    const linesA = await exportLines(first);
    const countsA = await statusCounts(first);
    await first.close();
    const digestA = digestOf(linesA);
    for (const { name } of EXPORTED_TABLES) expect(digestA[name]!.rows, `rows of ${name} in the first store`).toBeGreaterThan(0);
    expect(linesA.join('\n')).not.toContain('relay-secret');

    // 2. → PostgreSQL, and out again.
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const postgres = await openStore({ dataDir: makeTempDir(), databaseUrl: database.url });
    await importStore(postgres, iterate(linesA), mailImportWriter);
    const linesB = await exportLines(postgres);
    expect(await statusCounts(postgres)).toEqual(countsA);
    await postgres.close();
    expect(digestOf(linesB)).toEqual(digestA);

    // 3. → a new SQLite store.
    const finalDir = makeTempDir();
    const last = await openStore({ dataDir: finalDir });
    await importStore(last, iterate(linesB), mailImportWriter);
    const linesC = await exportLines(last);
    expect(await statusCounts(last)).toEqual(countsA);
    await last.close();
    expect(digestOf(linesC)).toEqual(digestA);

    // 4. An Outbox on the moved store takes a bounce for a mail sent before the move.
    const bouncePort = await freePort();
    const moved = await startInProcess({ ...source.environment.env, DATA_DIR: finalDir, BOUNCE_SMTP_PORT: String(bouncePort) });
    cleanups.push(() => moved.stop());
    const annReturnPath = returnPathSeen(keptMessageId, 'ann@example.net');
    const answer = await sendSmtp(bouncePort, {
      from: '',
      to: [annReturnPath],
      raw: dsn({
        returnPath: annReturnPath,
        recipients: [{ address: 'ann@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' }],
      }),
    });
    expect(answer.last).toMatch(/^250 /);
    const report = await moved.store.db
      .selectFrom('bounce_reports')
      .select(['mail_id'])
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
    expect(Number(report.mail_id)).toBe(keptId);
    const ann = await moved.store.db
      .selectFrom('mail_recipients')
      .select(['outcome'])
      .where('mail_id', '=', keptId)
      .where('address', '=', 'ann@example.net')
      .where('outcome', 'is not', null)
      .executeTakeFirstOrThrow();
    expect(ann.outcome).toBe('bounced');
  });
});
