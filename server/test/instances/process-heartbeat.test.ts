/**
 * The heartbeat as `npm start` wires it (main.ts start(), both engines): the case — WORKER=off after
 * `demo` — says no worker; a worker instance is listed with its roles and load; a graceful stop deletes the row
 * at once; `outbox instances` prints the same, as a table and as JSON, from a real CLI process.
 */
import type { InstancesResponse, QueueHealth } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertDemoMails } from '../../src/demo/demo-data.js';
import type { RunningOutbox } from '../../src/main.js';
import { openStore } from '../../src/store/connection.js';
import { cliProcess } from '../support/cli.js';
import { waitUntil } from '../support/net.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

/** `outbox …` as its own process (the run's bundle, support/cli.ts). */
const cli = cliProcess;

let environment: OutboxEnvironment;
let relay: TestRelay;
const running: RunningOutbox[] = [];

beforeAll(async () => {
  relay = await startTestRelay();
  environment = await freshEnvironment({ RELAY_URL: relay.url, HEARTBEAT_INTERVAL: '200ms', INSTANCE_STALE_AFTER: '2s' });
});
afterAll(async () => {
  await Promise.all(running.map((outbox) => outbox.stop()));
  await relay.close();
  await environment.dispose();
});

async function login(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Array<{ token: string }> }).data[0]!.token;
}

async function get<T>(baseUrl: string, token: string, url: string): Promise<T> {
  const response = await fetch(`${baseUrl}${url}`, { headers: { authorization: `Token ${token}` } });
  expect(response.status, url).toBe(200);
  return (await response.json()) as T;
}

async function rowsInStore(): Promise<Array<{ id: string; roles: string }>> {
  const store = await openStore({ dataDir: environment.dataDir, databaseUrl: environment.env.DATABASE_URL, maxConnections: 1 });
  try {
    return await store.db.selectFrom('instances').select(['id', 'roles']).execute();
  } finally {
    await store.close();
  }
}

describe('heartbeats of real instances', () => {
  it('WORKER=off after demo: no worker, though demo wrote claims and outcomes a moment ago; the CLI lists the instance; a stop removes it', async () => {
    const apiOnly = await startInProcess({ ...environment.env, WORKER: 'off' });
    running.push(apiOnly);
    // The case: demo mails include fresh Processing, ProviderSent and Error changes.
    await insertDemoMails(apiOnly.store, { count: 200, now: Date.now(), seed: 3, spanMs: 60_000 });
    const baseUrl = `http://127.0.0.1:${apiOnly.httpPort}`;
    const token = await login(baseUrl);

    const { data, meta } = await get<InstancesResponse>(baseUrl, token, '/api/v1/instances');
    expect(meta).toMatchObject({ liveInstances: 1, liveWorkers: 0 });
    expect(data).toEqual([
      expect.objectContaining({
        id: apiOnly.heartbeat.id,
        pid: process.pid,
        roles: ['api'],
        state: 'live',
        staleAfterSeconds: 2,
        inFlight: null,
        deliveredLastMinute: null,
        version: '0.3.0',
      }),
    ]);
    const health = (await get<{ data: QueueHealth[] }>(baseUrl, token, '/api/v1/queue/health')).data[0]!;
    expect(health.lastWorkerActivityAt).not.toBeNull();
    expect(health).toMatchObject({ liveWorkers: 0, workerActiveLastMinute: false });

    // The heartbeat goes on by itself (every 200 ms here).
    const firstBeat = data[0]!.lastHeartbeatAt;
    await waitUntil(
      async () => (await get<InstancesResponse>(baseUrl, token, '/api/v1/instances')).data[0]?.lastHeartbeatAt !== firstBeat,
      { what: 'a later heartbeat', timeoutMs: 10_000 },
    );

    const table = await cli(['instances'], environment.env);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+ROLES\s+HOST:PID\s+VERSION\s+STARTED\s+HEARTBEAT\s+IN FLIGHT\s+DELIVERED 1 MIN$/);
    expect(lines[1]).toMatch(new RegExp(`^${apiOnly.heartbeat.id.slice(0, 8)}\\s+live\\s+api\\s+\\S+:${process.pid}\\s+0\\.3\\.0\\s`));
    expect(lines.at(-1)).toBe('1 live instance, no worker running.');
    const json = await cli(['instances', '--json'], environment.env);
    expect(json.code, json.stderr).toBe(0);
    expect((JSON.parse(json.stdout) as InstancesResponse).data.map((i) => i.id)).toEqual([apiOnly.heartbeat.id]);

    await apiOnly.stop();
    running.splice(running.indexOf(apiOnly), 1);
    expect(await rowsInStore()).toEqual([]);
  }, 120_000);

  it('a worker instance is listed with its roles and load: mails it delivered in the last minute', async () => {
    const outbox = await startInProcess({ ...environment.env });
    running.push(outbox);
    const apiKey = await outbox.services.auth.createApiKey(`load-${Date.now()}`);
    const baseUrl = `http://127.0.0.1:${outbox.httpPort}`;
    const token = await login(baseUrl);
    const before = relay.received.length;
    const submitted = await fetch(`${baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify(
        [1, 2, 3].map((n) => ({ fromMail: 'shop@example.com', to: [{ recipientMail: `u${n}@example.net` }], subject: `m${n}`, text: 'x' })),
      ),
    });
    expect(submitted.status).toBe(202);
    await waitUntil(() => relay.received.length >= before + 3, { what: 'three mails at the relay', timeoutMs: 20_000 });

    let listed: InstancesResponse | undefined;
    await waitUntil(
      async () => {
        listed = await get<InstancesResponse>(baseUrl, token, '/api/v1/instances');
        return listed.data[0]?.deliveredLastMinute === 3;
      },
      { what: 'the heartbeat reporting 3 delivered in the last minute', timeoutMs: 10_000 },
    );
    expect(listed!.meta).toMatchObject({ liveInstances: 1, liveWorkers: 1 });
    expect(listed!.data[0]).toMatchObject({ id: outbox.heartbeat.id, roles: ['api', 'worker'], state: 'live', inFlight: 0 });
    expect((await get<{ data: QueueHealth[] }>(baseUrl, token, '/api/v1/queue/health')).data[0]).toMatchObject({
      liveWorkers: 1,
      workerActiveLastMinute: true,
    });
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metrics).toContain('outbox_live_workers 1');
    expect(metrics).toContain('outbox_instances{state="live"} 1');

    await outbox.stop();
    running.splice(running.indexOf(outbox), 1);
    expect(await rowsInStore()).toEqual([]);
  }, 120_000);
});
