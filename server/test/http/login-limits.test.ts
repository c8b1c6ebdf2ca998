/**
 * Login limits from the outside, with the default limits unless a test says otherwise:
 * counted when an attempt starts, hard limits per (name, address) and per address, a name attacked from
 * many addresses slowed but never locked, TRUST_PROXY, a trace of every failure in the log and /metrics, and
 * expired sessions purged by the retention job of a running instance.
 */
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { LoginThrottle, type LoginThrottleOptions } from '../../src/auth/login-throttle.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { hashSecret } from '../../src/auth/password.js';
import { insertAuditEntries } from '../../src/audit/audit.repository.js';
import { waitUntil } from '../support/net.js';
import { makeTempDir, openTestStore, PASSWORD, TEST_PASSWORD_COST, testEngine } from '../support/context.js';
import { freshEnvironment, startInProcess } from '../support/outbox-process.js';

interface Harness {
  app: FastifyInstance;
  clock: ManualClock;
  logLines: () => Array<Record<string, unknown>>;
  login(
    username: string,
    password: string,
    remoteAddress?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; retryAfter: string | undefined; ms: number }>;
  addOperator(username: string): Promise<void>;
  close(): Promise<void>;
}

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(throttleOptions: Partial<LoginThrottleOptions> = {}, trustProxy?: number | string[]): Promise<Harness> {
  const clock = new ManualClock(Date.parse('2026-11-23T10:00:00Z'));
  const { store, dispose } = await openTestStore(makeTempDir());
  let logged = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  const { app, services } = await buildApp({
    store,
    clock,
    logger: { level: 'warn', stream },
    loginThrottle: new LoginThrottle(() => clock.now(), throttleOptions),
    passwordCost: TEST_PASSWORD_COST,
    ...(trustProxy !== undefined ? { trustProxy } : {}),
  });
  await app.ready();
  await services.auth.addOperator('ops', PASSWORD);
  return {
    app,
    clock,
    logLines: () =>
      logged
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    async login(username, password, remoteAddress = '127.0.0.1', headers = {}) {
      const started = performance.now();
      const response = await app.inject({ method: 'POST', url: '/api/v1/login', remoteAddress, headers, payload: { username, password } });
      const retryAfter = response.headers['retry-after'];
      return {
        status: response.statusCode,
        retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
        ms: performance.now() - started,
      };
    },
    async addOperator(username) {
      await services.auth.addOperator(username, PASSWORD);
    },
    async close() {
      await app.close();
      await dispose();
    },
  };
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

describe(`login limits (${testEngine})`, () => {
  it('counts an attempt when it starts: 40 wrong passwords sent at once for one name from one address meet 429s', async () => {
    harness = await start();
    const { login } = harness;
    // Before: the limit was checked before the slow password hash and the failure counted after it, so all
    // 40 got 401 and none 429.
    const answers = await Promise.all(Array.from({ length: 40 }, () => login('ops', 'wrong')));
    const statuses = answers.map((a) => a.status);
    expect(count(statuses, 401)).toBe(10);
    expect(count(statuses, 429)).toBe(30);
    expect(answers.filter((a) => a.status === 429).every((a) => Number(a.retryAfter) > 0 && Number(a.retryAfter) <= 900)).toBe(true);
  });

  it('limits one address across names (30), right password included, until the window ends', async () => {
    harness = await start();
    const { login, clock } = harness;
    const statuses = await Promise.all(
      Array.from({ length: 35 }, (_, i) => login(`user${i % 5}`, 'wrong', '192.0.2.1').then((a) => a.status)),
    );
    expect(count(statuses, 401)).toBe(30);
    expect(count(statuses, 429)).toBe(5);
    expect((await login('ops', PASSWORD, '192.0.2.1')).status).toBe(429);
    expect((await login('ops', PASSWORD, '192.0.2.2')).status).toBe(200);
    clock.advance(15 * 60_000 + 1);
    expect((await login('ops', PASSWORD, '192.0.2.1')).status).toBe(200);
  });

  it('does not lock a name attacked from many addresses: the operator with the right password gets in within seconds', async () => {
    harness = await start();
    const { login, logLines } = harness;
    // Before: ten failures from anywhere locked the name for everyone for 15 minutes.
    const attack = await Promise.all(Array.from({ length: 30 }, (_, i) => login('ops', `guess${i}`, `198.51.100.${i + 1}`)));
    expect(attack.map((a) => a.status).every((s) => s === 401)).toBe(true);
    // The later attempts of the attack were made to wait; the delay is capped (4 s by default).
    expect(Math.max(...attack.map((a) => a.ms))).toBeGreaterThan(1_000);
    const operator = await login('ops', PASSWORD, '203.0.113.50');
    expect(operator.status).toBe(200);
    // It waits its turn behind the attack's queued guesses (one per 250 ms after the 4 s
    // delay, here about 8 s), never a lock.
    expect(operator.ms).toBeLessThan(12_000);
    console.log(
      `many-address attack: slowest of 30 attempts ${Math.round(Math.max(...attack.map((a) => a.ms)))} ms; operator in after ${Math.round(operator.ms)} ms`,
    );
    expect(logLines().some((line) => line.msg === 'login slowed' && line.username === 'ops')).toBe(true);
  });

  it('does not slow an address that logged in as that name before, and a success clears no other address', async () => {
    harness = await start({ baseDelayMs: 1_000, maxDelayMs: 1_000 });
    const { login } = harness;
    expect((await login('ops', PASSWORD, '203.0.113.50')).status).toBe(200);
    // Nine failures from one address, ten more from ten others: the name is now slowed.
    for (let i = 0; i < 9; i++) expect((await login('ops', 'wrong', '192.0.2.66')).status).toBe(401);
    await Promise.all(Array.from({ length: 10 }, (_, i) => login('ops', 'wrong', `198.51.100.${i + 1}`)));
    const known = await login('ops', PASSWORD, '203.0.113.50');
    expect(known.status).toBe(200);
    expect(known.ms).toBeLessThan(900);
    const stranger = await login('ops', PASSWORD, '203.0.113.51');
    expect(stranger.status).toBe(200);
    expect(stranger.ms).toBeGreaterThanOrEqual(950);
    // Those successes did not wipe 192.0.2.66's count: its tenth failure is its last before the 429.
    expect((await login('ops', 'wrong', '192.0.2.66')).status).toBe(401);
    expect((await login('ops', PASSWORD, '192.0.2.66')).status).toBe(429);
  });

  it('logs every failed and refused login at warn, with name, address and reason, never the password, and counts them in /metrics', async () => {
    harness = await start({ maxFailuresPerPair: 2 });
    const { login, logLines, app } = harness;
    await login('ops', 'hunter2-secret', '192.0.2.9');
    await login('ghost', 'hunter2-secret', '192.0.2.9');
    await login('ops', 'hunter2-secret', '192.0.2.9');
    expect((await login('ops', 'hunter2-secret', '192.0.2.9')).status).toBe(429);
    const lines = logLines().filter((line) => line.msg === 'login failed' || line.msg === 'login refused');
    expect(lines.map((line) => [line.level, line.username, line.address, line.reason])).toEqual([
      [40, 'ops', '192.0.2.9', 'invalid_credentials'],
      [40, 'ghost', '192.0.2.9', 'invalid_credentials'],
      [40, 'ops', '192.0.2.9', 'invalid_credentials'],
      [40, 'ops', '192.0.2.9', 'pair_limit'],
    ]);
    expect(JSON.stringify(logLines())).not.toContain('hunter2');
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain('outbox_login_failures_total{reason="invalid_credentials"} 3');
    expect(metrics).toContain('outbox_login_failures_total{reason="pair_limit"} 1');
    expect(metrics).toContain('outbox_login_failures_total{reason="client_limit"} 0');
  });

  it('logs a name that is no operator cut to 32 characters, an operator name whole (issue 24 item 5)', async () => {
    harness = await start();
    const { login, logLines } = harness;
    const longOperator = 'operations.team@mail.example.com.ops';
    const typedPassword = 'correct horse battery staple, and more words';
    expect((await login(typedPassword, 'x', '192.0.2.10')).status).toBe(401);
    expect((await login('short-ghost', 'x', '192.0.2.10')).status).toBe(401);
    await harness.addOperator(longOperator);
    expect((await login(longOperator, 'wrong', '192.0.2.10')).status).toBe(401);
    const lines = logLines().filter((line) => line.msg === 'login failed');
    expect(lines.map((line) => [line.username, line.usernameLength])).toEqual([
      [typedPassword.slice(0, 32), typedPassword.length],
      ['short-ghost', undefined],
      [longOperator, undefined],
    ]);
    expect(JSON.stringify(logLines())).not.toContain(typedPassword);
  });

  it('counts a client by X-Forwarded-For only from a trusted proxy (TRUST_PROXY)', async () => {
    // Behind a proxy without TRUST_PROXY every client is the proxy: one client's failures refuse the others.
    harness = await start({ maxFailuresPerClient: 3 });
    for (let i = 0; i < 3; i++) await harness.login(`u${i}`, 'wrong', '10.0.0.2', { 'x-forwarded-for': '192.0.2.1' });
    expect((await harness.login('ops', PASSWORD, '10.0.0.2', { 'x-forwarded-for': '192.0.2.2' })).status).toBe(429);
    await harness.close();

    for (const trustProxy of [1, ['10.0.0.0/8']]) {
      harness = await start({ maxFailuresPerClient: 3 }, trustProxy);
      for (let i = 0; i < 3; i++) await harness.login(`u${i}`, 'wrong', '10.0.0.2', { 'x-forwarded-for': '192.0.2.1' });
      expect((await harness.login('ops', PASSWORD, '10.0.0.2', { 'x-forwarded-for': '192.0.2.1' })).status).toBe(429);
      expect((await harness.login('ops', PASSWORD, '10.0.0.2', { 'x-forwarded-for': '192.0.2.2' })).status).toBe(200);
      // A client that is not a trusted proxy cannot name another address for itself.
      if (Array.isArray(trustProxy)) {
        for (let i = 0; i < 3; i++) await harness.login(`u${i}`, 'wrong', '192.0.2.77', { 'x-forwarded-for': `192.0.2.${100 + i}` });
        expect((await harness.login('ops', PASSWORD, '192.0.2.77', { 'x-forwarded-for': '192.0.2.200' })).status).toBe(429);
      }
      await harness.close();
      harness = undefined;
    }
  });
});

describe('TRUST_PROXY configuration', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['off', false],
    ['1', 1],
    ['2', 2],
    ['10.0.0.1', ['10.0.0.1']],
    ['10.0.0.0/8, 192.168.1.1 ,::1', ['10.0.0.0/8', '192.168.1.1', '::1']],
    ['fd00::/8', ['fd00::/8']],
  ])('reads %s as %j', (raw, expected) => {
    expect(loadConfig(raw === undefined ? {} : { TRUST_PROXY: raw }).trustProxy).toEqual(expected);
  });

  it.each(['on', 'true', '11', 'proxy.local', '10.0.0.0/33', '10.0.0.1,', '10.0.0.1/8/1'])('refuses %s, naming the variable', (raw) => {
    expect(() => loadConfig({ TRUST_PROXY: raw })).toThrow(/TRUST_PROXY must be off, a number of proxy hops/);
  });
});

describe(`expired sessions and old audit entries (${testEngine})`, () => {
  it('are deleted by the retention job of a running instance (AUDIT_RETENTION_DAYS for the audit log), and live ones kept', async () => {
    const environment = await freshEnvironment({ SMTP_PORT: 'off', AUDIT_RETENTION_DAYS: '30' });
    // A store with one expired and one live session, as an instance that ran for a while leaves it.
    const seeded = await startInProcess({ ...environment.env, WORKER: 'off' });
    const operator = await seeded.store.db.selectFrom('operators').select('id').executeTakeFirstOrThrow();
    const now = Date.now();
    await seeded.store.db
      .insertInto('sessions')
      .values([
        {
          token_hash: hashSecret('expired'),
          operator_id: operator.id,
          created_at: now - 2 * 86_400_000,
          expires_at: now - 86_400_000,
          revoked_at: null,
        },
        { token_hash: hashSecret('live'), operator_id: operator.id, created_at: now, expires_at: now + 86_400_000, revoked_at: null },
      ])
      .execute();
    // Before: the audit log was never purged.
    await insertAuditEntries(seeded.store.db, [
      { at: now - 31 * 86_400_000, actor: 'client:192.0.2.1', action: 'login.failed', target: 'operator:old' },
      { at: now - 29 * 86_400_000, actor: 'client:192.0.2.1', action: 'login.failed', target: 'operator:recent' },
    ]);
    await seeded.stop();

    const running = await startInProcess(environment.env);
    try {
      const deadline = Date.now() + 10_000;
      let hashes: string[] = [];
      do {
        hashes = (await running.store.db.selectFrom('sessions').select('token_hash').execute()).map((row) => row.token_hash);
        if (!hashes.includes(hashSecret('expired'))) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      } while (Date.now() < deadline);
      expect(hashes).toEqual([hashSecret('live')]);
      const targetsOf = async () =>
        (await running.store.db.selectFrom('audit_log').select('target').where('action', '=', 'login.failed').execute()).map(
          (row) => row.target,
        );
      await waitUntil(async () => !(await targetsOf()).includes('operator:old'), { what: 'the old audit entry to be purged' });
      expect(await targetsOf()).toEqual(['operator:recent']);
    } finally {
      await running.stop();
      await environment.dispose();
    }
  });
});
