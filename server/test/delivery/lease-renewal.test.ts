/**
 * Leases that match the send (docs/lifecycle.md §6), from the outside: Outbox started as `npm start` starts it
 * against a real relay on loopback.
 * - A relay slower to answer the end of DATA than the lease: the worker waits for the reply (RFC 5321 gives it ten
 *   minutes) and renews the lease meanwhile, so the mail reaches the relay once and ends ProviderSent. (Before, the
 *   relay socket gave up at half the lease and the mail was sent again.)
 * - A worker process killed with SIGKILL while its sends hang: its heartbeat goes stale (after 3 s here, 15 s by
 *   default), and the sweeper of another instance releases its leases then, not when the 60 s lease runs out.
 */
import { MailStatus } from '@outbox/contract';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { waitUntil } from '../support/net.js';
import { freshEnvironment, spawnOutbox, startInProcess, type OutboxEnvironment, type OutboxProcess } from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let relay: TestRelay | undefined;
let environment: OutboxEnvironment | undefined;
let running: RunningOutbox | undefined;
let child: OutboxProcess | undefined;

afterEach(async () => {
  await child?.kill().catch(() => undefined);
  await running?.stop();
  await environment?.dispose();
  await relay?.close();
  child = running = environment = relay = undefined;
});

async function submit(baseUrl: string, apiKey: string, count: number): Promise<number[]> {
  const response = await fetch(`${baseUrl}/api/v1/mail`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
    body: JSON.stringify(
      Array.from({ length: count }, (_, i) => ({
        fromMail: 'shop@example.com',
        to: [{ recipientMail: `r${i}@example.net` }],
        subject: `m${i}`,
        text: 'x',
      })),
    ),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { data: Array<{ id: number }> }).data.map((m) => m.id);
}

const statusOf = async (outbox: RunningOutbox, id: number) => (await outbox.services.mails.getMailDetail(id)).status;

describe('leases that match the send', () => {
  it('a relay that takes twice the lease to answer the end of DATA gets the mail once; it ends ProviderSent', async () => {
    relay = await startTestRelay();
    relay.delayMs = 4_000; // the lease is 2 s
    // A retry would come at once (RETRY_BASE_DELAY 10ms): a second DATA would show within the wait below.
    environment = await freshEnvironment({ RELAY_URL: relay.url, LEASE_SECONDS: '2', RETRY_BASE_DELAY: '10ms' });
    running = await startInProcess(environment.env);
    const apiKey = await running.services.auth.createApiKey('shop');
    const [id] = await submit(`http://127.0.0.1:${running.httpPort}`, apiKey, 1);
    const outbox = running;
    await waitUntil(async () => (await statusOf(outbox, id!)) === MailStatus.ProviderSent, {
      timeoutMs: 30_000,
      what: 'the mail ProviderSent',
    });
    relay.delayMs = 0;
    // Two more leases' time: a released lease would have been claimed and sent again by now.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect(relay.attempts).toBe(1);
    const detail = await outbox.services.mails.getMailDetail(id!);
    expect(detail.status).toBe(MailStatus.ProviderSent);
    expect(detail.events.filter((e) => e.type === 'lease-expired')).toEqual([]);
  });

  it('a worker killed with SIGKILL mid-send: another instance delivers its mails once its heartbeat is stale, not after the 60 s lease', async () => {
    relay = await startTestRelay();
    relay.delayMs = 120_000; // every send hangs until the kill
    // The threshold is an option (INSTANCE_STALE_AFTER): 3 s rather than the default 15 s, so the test waits
    // seconds, not a quarter of a minute, for what it proves.
    environment = await freshEnvironment({
      RELAY_URL: relay.url,
      LEASE_SECONDS: '60',
      HEARTBEAT_INTERVAL: '1s',
      INSTANCE_STALE_AFTER: '3s',
    });
    child = await spawnOutbox({ ...environment.env, SMTP_PORT: '0' });
    const { createApiKeyInStore } = await apiKeys();
    const apiKey = await createApiKeyInStore(environment);
    const ids = await submit(child.baseUrl, apiKey, 5);
    await waitUntil(() => relay!.attempts >= 5, { timeoutMs: 30_000, what: 'five sends hanging at the relay' });
    await child.kill();
    const killedAt = Date.now();
    child = undefined;
    relay.delayMs = 0;

    running = await startInProcess(environment.env);
    const outbox = running;
    await waitUntil(async () => (await Promise.all(ids.map((id) => statusOf(outbox, id)))).every((s) => s === MailStatus.ProviderSent), {
      timeoutMs: 45_000,
      what: 'the killed worker’s mails ProviderSent',
    });
    const tookMs = Date.now() - killedAt;
    expect(tookMs).toBeLessThan(30_000); // 3 s staleness, a 5 s sweep and a loaded machine's slack: half the lease
    const detail = await outbox.services.mails.getMailDetail(ids[0]!);
    expect(detail.events.map((e) => e.type)).toContain('lease-expired');
  });
});

/** An API key written straight into the child's store (the child owns the server; the CLI's way, in process). */
async function apiKeys() {
  const { openStore } = await import('../../src/store/connection.js');
  const { createAuthService } = await import('../../src/auth/auth.service.js');
  return {
    async createApiKeyInStore(env: OutboxEnvironment): Promise<string> {
      const store = await openStore({
        dataDir: env.dataDir,
        ...(env.env.DATABASE_URL ? { databaseUrl: env.env.DATABASE_URL } : {}),
        maxConnections: 1,
      });
      try {
        return await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('shop');
      } finally {
        await store.close();
      }
    },
  };
}
