/**
 * Heartbeats across real processes on one PostgreSQL database (PostgreSQL only, like the rest of this folder): an
 * API-only instance and a worker-only one (PORT=off, so it is ready when its heartbeat row appears) both listed,
 * the worker's load seen by the other instance; the worker killed with SIGKILL is shown stale within the
 * configured threshold and queue health says no worker; a graceful stop deletes the row at once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InstancesResponse, QueueHealth } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { createAuthService } from '../../src/auth/auth.service.js';
import { openStore, type Store } from '../../src/store/connection.js';
import { waitUntil } from '../support/net.js';
import {
  freshEnvironment,
  killAllSpawned,
  nodeArgs,
  spawnOutbox,
  type OutboxEnvironment,
  type OutboxProcess,
} from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Short timings so the test does not wait 15 s: a beat every 500 ms, stale after 3 s. */
const HEARTBEAT = { HEARTBEAT_INTERVAL: '500ms', INSTANCE_STALE_AFTER: '3s' };

let relay: TestRelay;
let environment: OutboxEnvironment;
let store: Store;
let apiInstance: OutboxProcess | undefined;
let worker: ChildProcess | undefined;
let workerOutput = '';

beforeAll(async () => {
  relay = await startTestRelay();
  environment = await freshEnvironment({ RELAY_URL: relay.url, ...HEARTBEAT });
  store = await openStore({ dataDir: environment.dataDir, databaseUrl: environment.env.DATABASE_URL, maxConnections: 2 });
});

afterAll(async () => {
  if (worker && worker.exitCode === null && worker.signalCode === null) {
    const exited = new Promise((resolve) => worker!.once('exit', resolve));
    worker.kill('SIGKILL');
    await exited;
  }
  await apiInstance?.kill();
  await killAllSpawned();
  await store.close();
  await relay.close();
  await environment.dispose();
});

/** A worker-only instance (no HTTP, no SMTP): `PORT=off SMTP_PORT=off WORKER=on`, as in docs/operations.md. */
function spawnWorkerOnly(): ChildProcess {
  const child = spawn(process.execPath, nodeArgs('main'), {
    cwd: serverDir,
    env: { ...process.env, ...environment.env, PORT: 'off', SMTP_PORT: 'off', WORKER: 'on', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => (workerOutput += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (workerOutput += chunk.toString()));
  return child;
}

describe('instances on one PostgreSQL database', () => {
  it('an API-only and a worker-only instance are both listed; the worker SIGKILLed is stale within the threshold and queue health says no worker', async () => {
    onTestFailed(() =>
      console.log(`--- worker-only ---\n${workerOutput.slice(-3000)}\n--- api ---\n${apiInstance?.output().slice(-3000)}`),
    );
    // Both start at once, from the run's bundle.
    worker = spawnWorkerOnly();
    apiInstance = await spawnOutbox({ ...environment.env, WORKER: 'off' });
    const baseUrl = apiInstance.baseUrl;
    const login = await fetch(`${baseUrl}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
    });
    const token = ((await login.json()) as { data: Array<{ token: string }> }).data[0]!.token;
    const get = async <T>(url: string): Promise<T> => {
      const response = await fetch(`${baseUrl}${url}`, { headers: { authorization: `Token ${token}` } });
      expect(response.status, url).toBe(200);
      return (await response.json()) as T;
    };

    let listed: InstancesResponse | undefined;
    await waitUntil(
      async () => {
        if (worker!.exitCode !== null) throw new Error(`the worker-only instance exited: ${workerOutput}`);
        listed = await get<InstancesResponse>('/api/v1/instances');
        return listed.meta.liveWorkers === 1;
      },
      { what: 'the worker-only instance listed by the API instance', timeoutMs: 90_000, intervalMs: 100 },
    );
    expect(listed!.meta).toMatchObject({ liveInstances: 2, liveWorkers: 1 });
    const byPid = new Map(listed!.data.map((instance) => [instance.pid, instance]));
    expect(byPid.get(apiInstance.child.pid!)).toMatchObject({ roles: ['api'], state: 'live', inFlight: null });
    expect(byPid.get(worker.pid!)).toMatchObject({ roles: ['worker'], state: 'live', inFlight: 0, staleAfterSeconds: 3 });
    const workerId = byPid.get(worker.pid!)!.id;
    expect((await get<{ data: QueueHealth[] }>('/api/v1/queue/health')).data[0]).toMatchObject({
      liveWorkers: 1,
      workerActiveLastMinute: true,
    });

    // A mail taken by the API instance is delivered by the worker-only one, whose load the API instance reports.
    const apiKey = await createAuthService({ store, clock: { now: Date.now }, sessionTtlSeconds: 3600 }).createApiKey('instances');
    const submitted = await fetch(`${baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'hi', text: 'x' }),
    });
    expect(submitted.status).toBe(202);
    await waitUntil(
      async () => (await get<InstancesResponse>('/api/v1/instances')).data.find((i) => i.id === workerId)?.deliveredLastMinute === 1,
      { what: "the worker's heartbeat reporting the delivery", timeoutMs: 20_000, intervalMs: 100 },
    );
    expect(relay.received).toHaveLength(1);

    // SIGKILL: no goodbye, so the row stays and turns stale once 3 s pass without a beat.
    const exited = new Promise((resolve) => worker!.once('exit', resolve));
    worker.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    await waitUntil(
      async () => (await get<InstancesResponse>('/api/v1/instances')).data.find((i) => i.id === workerId)?.state === 'stale',
      { what: 'the killed worker shown stale', timeoutMs: 20_000, intervalMs: 100 },
    );
    const staleAfterMs = Date.now() - killedAt;
    console.log(`killed worker shown stale after ${staleAfterMs} ms (threshold 3 s, beats every 500 ms)`);
    expect(staleAfterMs).toBeLessThan(20_000);
    const after = await get<InstancesResponse>('/api/v1/instances');
    expect(after.meta).toMatchObject({ liveInstances: 1, liveWorkers: 0 });
    expect((await get<{ data: QueueHealth[] }>('/api/v1/queue/health')).data[0]).toMatchObject({
      liveWorkers: 0,
      workerActiveLastMinute: false,
    });
    expect(await (await fetch(`${baseUrl}/metrics`)).text()).toMatch(/outbox_live_workers 0\n[\s\S]*outbox_instances\{state="stale"\} 1/);

    // A graceful stop deletes the API instance's row at once; the killed worker's stays (forgotten in an hour).
    expect(await apiInstance.stop()).toBe(0);
    apiInstance = undefined;
    const rows = await store.db.selectFrom('instances').select(['id']).execute();
    expect(rows.map((row) => row.id)).toEqual([workerId]);
  }, 180_000);
});
