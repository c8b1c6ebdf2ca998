/**
 * What a delivery writes (migrations 016 and 022): no lease in the mail record and no claim index
 * on it, the queue's partial indexes that the claim and the sweeper read; on PostgreSQL, `mail_recipients` pages with room for the outcome's HOT update, and the recipient
 * outcomes written through arrays (`unnest`), so a relay's reply reaches the store exactly as it was said,
 * whatever characters an array literal would have to escape (SMTP replies are ASCII: nodemailer reads them as Latin-1). The sweeper still finds an expired lease
 * without the index (lease tests in worker.test.ts).
 */
import { MailStatus, type MailDetail, type SubmitMailRequest } from '@outbox/contract';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/auth/auth.service.js';
import { getMailDetail, loginAs, testEngine, type TestContext } from '../support/context.js';
import type { TestRelay } from '../support/test-relay.js';
import { createWorkerHarness, type WorkerHarness } from '../support/worker-harness.js';

let harness: WorkerHarness;
let context: TestContext;
let relay: TestRelay;
let principal: ApiKeyPrincipal;

beforeEach(async () => {
  harness = await createWorkerHarness();
  ({ context, relay, principal } = harness);
});

afterEach(() => harness.close());

async function mailIndexes(): Promise<string[]> {
  if (context.store.engine === 'postgres') {
    const { rows } = await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'mails'`.execute(
      context.store.db,
    );
    return rows.map((r) => r.name);
  }
  const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'mails'`.execute(
    context.store.db,
  );
  return rows.map((r) => r.name);
}

describe('delivery writes (migration 016)', () => {
  it("the queue is its own table (migration 022): mails holds no lease and no claim index; the sweeper reads the queue's partial index of leases", async () => {
    const indexes = await mailIndexes();
    expect(indexes).not.toContain('mails_lease_idx');
    expect(indexes).not.toContain('mails_processing_lease_idx');
    expect(indexes).not.toContain('mails_queue_due_idx');
    // The sweeper's query (delivery.repository.ts listExpiredLeases); PostgreSQL would scan the few rows of a test
    // table rather than read any index, so it is told not to.
    const sweep = sql`select mail_id, lease_owner, attempts from mail_queue where lease_owner is not null and lease_expires_at <= 1`;
    const claim = sql`select mail_id from mail_queue where lease_owner is null and due_at <= 1 order by due_at, mail_id limit 50`;
    const planOf = async (query: typeof sweep) =>
      context.store.engine === 'postgres'
        ? await context.store.db.transaction().execute(async (trx) => {
            await sql`set local enable_seqscan = off`.execute(trx);
            const { rows } = await sql<{ 'QUERY PLAN': string }>`explain ${query}`.execute(trx);
            return rows.map((r) => r['QUERY PLAN']).join('\n');
          })
        : (await sql<{ detail: string }>`explain query plan ${query}`.execute(context.store.db)).rows.map((r) => r.detail).join('\n');
    expect(await planOf(sweep)).toContain('mail_queue_lease_idx');
    expect(await planOf(claim)).toContain('mail_queue_due_idx');
    expect(indexes).toEqual(expect.arrayContaining(['mails_status_idx', 'mails_status_last_update_idx']));
  });

  // PostgreSQL's own storage parameter: the SQLite half leaves it out rather than reporting it skipped.
  if (testEngine === 'postgres')
    it('PostgreSQL: mail_recipients pages keep room for HOT outcome updates (fillfactor 75)', async () => {
      const { rows } = await sql<{ options: string[] | null }>`
      select reloptions as options from pg_class where relname = 'mail_recipients'`.execute(context.store.db);
      expect(rows[0]?.options).toContain('fillfactor=75');
    });

  it("a relay's refusal with quotes, braces, commas and backslashes is stored as said, per recipient", async () => {
    const reply = '5.1.1 <ann@example.net>: "no such {user}", see \\\\host\\share';
    relay.rcptAnswer = (address) => (address === 'ann@example.net' ? { code: 550, message: reply } : { accept: true });
    const request: SubmitMailRequest = {
      fromName: 'Shop',
      fromMail: 'shop@example.com',
      to: [
        { recipientName: 'Ann', recipientMail: 'ann@example.net' },
        { recipientName: 'Bob', recipientMail: 'bob@example.net' },
      ],
      subject: 'Quotes',
      text: 'Hi',
    };
    const [mail] = await context.services.submissions.submitJson(principal, [request], true);
    const token = await loginAs(context);
    harness.startWorker({ concurrency: 2 });
    let detail: MailDetail | undefined;
    await expect
      .poll(
        async () => {
          detail = await getMailDetail(context, token, mail!.id);
          return detail.status;
        },
        { timeout: 10_000, interval: 10 },
      )
      .toBe(MailStatus.ProviderSent);
    const envelope = Object.fromEntries(detail!.recipients!.filter((r) => r.kind === 'envelope').map((r) => [r.recipientMail, r]));
    expect(envelope['ann@example.net']).toMatchObject({ outcome: 'rejected', reply: `550 ${reply}` });
    expect(envelope['bob@example.net']).toMatchObject({ outcome: 'accepted' });
  });
});
