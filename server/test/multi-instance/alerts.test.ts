/**
 * One alert evaluator across instances (PostgreSQL only, like the rest of this folder): two real processes on one
 * database, both trying every 300 ms, with no worker and a due mail. The no-worker rule fires exactly once (one
 * `alert.firing` event, one audit entry, one history row), however many rounds both instances attempt; the
 * instance that evaluated is stopped and started again, and the rule stays firing without a second event.
 */
import type { AlertsResponse } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthService } from '../../src/auth/auth.service.js';
import { openStore, type Store } from '../../src/store/connection.js';
import { waitUntil } from '../support/net.js';
import { freshEnvironment, killAllSpawned, spawnOutbox, type OutboxEnvironment, type OutboxProcess } from '../support/outbox-process.js';

const ALERTS = { WORKER: 'off', ALERT_EVALUATION_INTERVAL: '300ms', ALERT_PENDING: '0', ALERT_NO_WORKER_FOR: '0', ALERT_COOLDOWN: '0' };

let environment: OutboxEnvironment;
let store: Store;
const running: OutboxProcess[] = [];

beforeAll(async () => {
  environment = await freshEnvironment(ALERTS);
  store = await openStore({ dataDir: environment.dataDir, databaseUrl: environment.env.DATABASE_URL, maxConnections: 2 });
});

afterAll(async () => {
  await killAllSpawned();
  await store.close();
  await environment.dispose();
});

async function login(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
  });
  return ((await response.json()) as { data: Array<{ token: string }> }).data[0]!.token;
}

async function noWorker(baseUrl: string, token: string) {
  const response = await fetch(`${baseUrl}/api/v1/alerts`, { headers: { authorization: `Token ${token}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as AlertsResponse).data.find((rule) => rule.rule === 'no_worker')!;
}

const firingEvents = async () =>
  Number(
    (
      await store.db
        .selectFrom('application_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('type', '=', 'alert.firing')
        .executeTakeFirst()
    )?.n,
  );
const firingHistory = async () =>
  Number(
    (
      await store.db
        .selectFrom('alert_history')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('to_state', '=', 'firing')
        .executeTakeFirst()
    )?.n,
  );
const firingAudit = async () =>
  Number(
    (
      await store.db
        .selectFrom('audit_log')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('action', '=', 'alert.firing')
        .executeTakeFirst()
    )?.n,
  );

/** Waits until `rounds` more evaluations were stored (by whichever instance), so "not again" is not a guess. */
async function waitForRounds(baseUrl: string, token: string, rounds: number): Promise<void> {
  const start = Date.parse((await noWorker(baseUrl, token)).lastEvaluatedAt ?? '1970-01-01T00:00:00Z');
  await waitUntil(async () => Date.parse((await noWorker(baseUrl, token)).lastEvaluatedAt ?? '') >= start + rounds * 300, {
    what: `${rounds} more evaluation rounds`,
    timeoutMs: 30_000,
    intervalMs: 100,
  });
}

describe('alerts across instances on one PostgreSQL database', () => {
  it('two instances: one evaluator, one firing; a restarted instance keeps the firing state and does not fire again', async () => {
    const [a, b] = await Promise.all([spawnOutbox(environment.env), spawnOutbox(environment.env)]);
    running.push(a!, b!);
    const token = await login(a!.baseUrl);
    const apiKey = await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('alerts');
    const submitted = await fetch(`${a!.baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'hi', text: 'x' }),
    });
    expect(submitted.status).toBe(202);

    await waitUntil(async () => (await noWorker(b!.baseUrl, await login(b!.baseUrl))).state === 'firing', {
      what: 'the no-worker rule firing',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await waitForRounds(a!.baseUrl, token, 10);
    expect(await firingEvents()).toBe(1);
    expect(await firingHistory()).toBe(1);
    expect(await firingAudit()).toBe(1);

    // Both instances stop and one starts again: the state is the store's.
    expect(await a!.stop()).toBe(0);
    expect(await b!.stop()).toBe(0);
    const c = await spawnOutbox(environment.env);
    running.push(c);
    const tokenC = await login(c.baseUrl);
    expect((await noWorker(c.baseUrl, tokenC)).state).toBe('firing');
    await waitForRounds(c.baseUrl, tokenC, 5);
    expect((await noWorker(c.baseUrl, tokenC)).state).toBe('firing');
    expect(await firingEvents()).toBe(1);
    expect(await firingHistory()).toBe(1);
  }, 180_000);
});
