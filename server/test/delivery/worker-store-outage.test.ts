/**
 * The worker while the store does not answer, on both engines. The outage is a trigger
 * that fails every insert into mail_events, so every outcome commit and every claim fails (on PostgreSQL
 * the real restart, through a proxy, is test/multi-instance/database-restart.test.ts). While it lasts the
 * worker starts no new send: only the sends in flight when it learned of it finish. Their outcomes are
 * retried while their leases hold, so when the store answers again within the lease every mail ends
 * ProviderSent and none reaches the relay twice. Time is a ManualClock: leases never expire by themselves.
 */
import { MailStatus, type SubmitMailRequest } from '@outbox/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayTransport, type RelayTransport } from '../../src/delivery/relay-transport.js';
import { createRetryPolicy } from '../../src/delivery/retry-policy.js';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/delivery/worker.js';
import type { Logger } from '../../src/logger.js';
import { createTestContext, testEngine, type TestContext } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

const CONCURRENCY = 4;
const MAILS = 40;

let context: TestContext;
let relay: TestRelay;
let transport: RelayTransport;
let worker: DeliveryWorker | undefined;

beforeAll(async () => {
  context = await createTestContext();
  relay = await startTestRelay();
  transport = createRelayTransport(relay.url, { connectionTimeoutMs: 2_000, socketTimeoutMs: 5_000 });
});

afterAll(async () => {
  await worker?.stop({ graceMs: 0 });
  await transport.close();
  await relay.close();
  await context.close();
});

/** Every insert into mail_events fails, as every write does while the store is away. */
async function breakStore(): Promise<void> {
  if (testEngine === 'postgres') {
    await sql`create function outbox_test_outage() returns trigger language plpgsql as $$ begin raise exception 'the store is away (test)'; end $$`.execute(
      context.store.db,
    );
    await sql`create trigger outbox_test_outage before insert on mail_events for each row execute function outbox_test_outage()`.execute(
      context.store.db,
    );
  } else {
    await sql`create trigger outbox_test_outage before insert on mail_events begin select raise(abort, 'the store is away (test)'); end`.execute(
      context.store.db,
    );
  }
}

async function repairStore(): Promise<void> {
  await sql`drop trigger outbox_test_outage${sql.raw(testEngine === 'postgres' ? ' on mail_events' : '')}`.execute(context.store.db);
  if (testEngine === 'postgres') await sql`drop function outbox_test_outage()`.execute(context.store.db);
}

describe(`the worker while the store does not answer (${testEngine})`, () => {
  it('starts no new send during the outage, and delivers every mail once when the store is back', async () => {
    const commitFailures: number[] = [];
    const logger: Logger = {
      info: () => undefined,
      warn: () => undefined,
      error(_object, message) {
        if (message === 'could not record delivery outcomes') commitFailures.push(relay.transactions);
      },
    };
    const key = await context.services.auth.createApiKey('outage');
    const principal = (await context.services.auth.findApiKeyPrincipal(key))!;
    const request = (i: number): SubmitMailRequest => ({
      fromMail: 'shop@example.com',
      to: [{ recipientMail: `r${i}@example.net` }],
      subject: `outage ${i}`,
      text: 'x',
    });
    const ids = (
      await context.services.submissions.submitJson(
        principal,
        Array.from({ length: MAILS }, (_, i) => request(i)),
        true,
      )
    ).map((mail) => mail.id);

    // A slow relay, so that sends are in flight when the store goes.
    relay.delayMs = 150;
    worker = createDeliveryWorker({
      store: context.store,
      clock: context.clock,
      transport,
      retryPolicy: createRetryPolicy({ maxAttempts: 3, baseDelayMs: 60_000, jitter: 0 }),
      concurrency: CONCURRENCY,
      leaseMs: 60_000,
      pollIntervalMs: 20,
      flushDelayMs: 1,
      logger,
    });
    worker.start();
    await waitUntil(() => relay.received.length >= CONCURRENCY, { what: 'the first deliveries', timeoutMs: 10_000 });

    await breakStore();
    await waitUntil(() => commitFailures.length > 0, { what: 'a failed outcome commit', timeoutMs: 10_000 });
    const startedWhenLearned = commitFailures[0]!;
    // The sends in flight finish; then the outcomes keep failing (retried, and probed) while nothing new starts.
    await waitUntil(() => worker!.inFlight === 0, { what: 'the sends in flight to finish', timeoutMs: 10_000 });
    const startedAfterInFlight = relay.transactions;
    const failuresThen = commitFailures.length;
    await waitUntil(() => commitFailures.length >= failuresThen + 6, { what: 'six more failed commits', timeoutMs: 20_000 });
    const startedDuringOutage = relay.transactions;
    expect(startedAfterInFlight - startedWhenLearned, 'sends started after the first failed commit').toBeLessThanOrEqual(CONCURRENCY);
    expect(startedDuringOutage, 'a send started while the store was away').toBe(startedAfterInFlight);

    await repairStore();
    await waitUntil(
      async () => {
        const rows = await context.store.db.selectFrom('mails').select('status').where('id', 'in', ids).execute();
        return rows.every((row) => row.status === MailStatus.ProviderSent);
      },
      { what: 'every mail ProviderSent after the store came back', timeoutMs: 20_000 },
    );
    const times = new Map<string, number>();
    for (const message of relay.received) times.set(message.messageId!, (times.get(message.messageId!) ?? 0) + 1);
    expect(times.size).toBe(MAILS);
    expect(
      [...times.values()].filter((n) => n > 1),
      'mails sent twice',
    ).toEqual([]);
    console.log(
      `store outage (${testEngine}): ${startedAfterInFlight - startedWhenLearned} sends started after the first failed commit, ` +
        `${commitFailures.length} failed commits, ${relay.received.length} messages for ${MAILS} mails`,
    );
  }, 60_000);
});
