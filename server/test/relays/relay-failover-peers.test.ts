/**
 * Failover proven against real peers (docs/relays.md#how-failover-is-proven): two Postfix smtp-sinks on loopback, each
 * in its own process, are the named relays `primary` and `fallback` of one route; Outbox runs as `npm start` wires it
 * (main.ts, in this process) and takes a flood of mails in HTTP batches. Mid-flood the primary is SIGKILLed:
 * - every mail ends ProviderSent, and each Message-ID arrives exactly once across both peers (counted in the peers'
 *   own dumps, not in Outbox);
 * - the mails that failed over to the fallback spent no retry budget (one attempt each);
 * - `GET /api/v1/relays/health` shows the primary `down` within 5 s of the kill, and the relay_down alert fires;
 * - started again on its port, the primary is `up` again, the mails go back to it, and the alert resolves.
 * Skipped with a message where smtp-sink is missing; in CI (CI=true) that fails (`.ci/run` installs Debian's postfix).
 */
import type { RelayHealth } from '@outbox/contract';
import { MailStatus } from '@outbox/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../support/net.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { smtpSinkMissing, startSmtpSink, stopAllSmtpSinks } from '../support/smtp-sink.js';

type Running = Awaited<ReturnType<typeof startInProcess>>;

const isCI = process.env.CI === 'true' || process.env.CI === '1';
const missing = smtpSinkMissing();
if (missing && !isCI) console.warn(`Skipping the failover proof against smtp-sink peers: ${missing}.`);

/**
 * The flood, and the batch it is submitted in (the API's largest). 500 mails keep the test within seconds of CPU; the
 * issue's 5,000 run as `npm run bench -- failover` (bench/failover.ts sets OUTBOX_FAILOVER_FLOOD and reads the figures
 * this test prints): at 5,000 the flood alone took 46–71 s of wall time at load 23–25 on two cores.
 */
const FLOOD = Number(process.env.OUTBOX_FAILOVER_FLOOD ?? 500);
const BATCH = 500;
/** Deadlines grow with the flood: on two cores shared with other work (load 28) the worker delivered ~17 mails a second. */
const FLOOD_DEADLINE_MS = Math.max(120_000, FLOOD * 100);
/** The primary is killed once it has taken this share of the flood. */
const KILL_AT = Math.floor(FLOOD / 5);
/** The last line of every mail's text: a dump that holds it holds the whole message. */
const MARKER = '-- end of the failover proof mail';

let running: Running | undefined;
let environment: OutboxEnvironment | undefined;

afterEach(async () => {
  await running?.stop();
  running = undefined;
  await environment?.dispose();
  environment = undefined;
  await stopAllSmtpSinks();
});

describe.skipIf(missing !== undefined && !isCI)('failover between two real peers', () => {
  it(
    'a primary killed mid-flood: every mail once through the fallback, down within 5 s, alerted; restarted, its mails return',
    async () => {
      if (missing) throw new Error(`The failover proof cannot run in CI: ${missing}`);
      const primary = await startSmtpSink();
      const fallback = await startSmtpSink();
      environment = await freshEnvironment({
        // A mail cut by the kill after its message was handed over may have been taken: it is retried on its backoff,
        // which is short here so that the test does not wait the default 30 s for it.
        RETRY_BASE_DELAY: '1s',
        ALERT_EVALUATION_INTERVAL: '250ms',
        ALERT_RELAY_DOWN_FOR: '1s',
        ALERT_COOLDOWN: '0',
      });
      running = await startInProcess(environment.env);
      const outbox = running;
      const base = `http://127.0.0.1:${outbox.httpPort}`;
      const call = async <T>(method: string, url: string, token: string, body?: unknown): Promise<T> => {
        const response = await fetch(`${base}${url}`, {
          method,
          headers: { authorization: `Token ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await response.text();
        expect(response.ok, `${method} ${url}: ${response.status} ${text}`).toBe(true);
        return JSON.parse(text) as T;
      };
      const login = await fetch(`${base}/api/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
      });
      const operator = ((await login.json()) as { data: Array<{ token: string }> }).data[0]!.token;
      for (const [name, peer] of [
        ['primary', primary],
        ['fallback', fallback],
      ] as const)
        await call('POST', '/api/v1/relays', operator, { name, url: peer.url, tls: 'off' });
      await call('PUT', '/api/v1/routes', operator, { routes: [{ match: {}, relays: ['primary', 'fallback'] }] });
      const key = await outbox.services.auth.createApiKey('shop');

      let submitted = 0;
      const submit = async (count: number, subject: string): Promise<number[]> => {
        const ids: number[] = [];
        for (let done = 0; done < count; done += BATCH) {
          const size = Math.min(BATCH, count - done);
          const batch = Array.from({ length: size }, (_, i) => ({
            fromMail: 'shop@example.com',
            to: [{ recipientMail: `user${submitted + i}@example.net` }],
            subject: `${subject} ${submitted + i}`,
            text: `Hello ${submitted + i}\n${MARKER}\n`,
          }));
          submitted += size;
          const answer = await call<{ data: Array<{ id: number }> }>('POST', '/api/v1/mail', key, batch);
          ids.push(...answer.data.map((mail) => mail.id));
        }
        return ids;
      };
      const relayOf = async (name: string) =>
        (await call<{ data: RelayHealth[] }>('GET', '/api/v1/relays/health', operator)).data.find((relay) => relay.relay === name)!;
      const alertOf = async () =>
        (await call<{ data: Array<{ rule: string; state: string; summary: string }> }>('GET', '/api/v1/alerts', operator)).data.find(
          (alert) => alert.rule === 'relay_down',
        )!;
      const sentCount = async () =>
        (await call<{ meta: { counts: Record<string, number> } }>('GET', '/api/v1/mail/list?limit=1', operator)).meta.counts[
          String(MailStatus.ProviderSent)
        ] ?? 0;

      // The flood, and beside it the kill: once the primary has taken a fifth of it, SIGKILL.
      const startedAt = performance.now();
      const cpuAtStart = process.cpuUsage();
      let killedAt = 0;
      let takenBeforeKill = 0;
      const killer = waitUntil(() => primary.transactions() >= KILL_AT, {
        timeoutMs: FLOOD_DEADLINE_MS,
        intervalMs: 10,
        what: `the primary to take ${KILL_AT} mails`,
      }).then(async () => {
        killedAt = Date.now();
        await primary.kill();
        takenBeforeKill = primary.received(MARKER).length;
      });
      const ids = await submit(FLOOD, 'flood');
      const submittedAt = performance.now();
      await killer;

      // The console sees it: down within 5 s of the kill, in every read of the health.
      await waitUntil(async () => (await relayOf('primary')).state === 'down', {
        timeoutMs: 5_000,
        intervalMs: 50,
        what: 'the primary down in GET /api/v1/relays/health',
      });
      const downAfterMs = Date.now() - killedAt;
      expect(downAfterMs).toBeLessThan(5_000);
      expect(await relayOf('primary')).toMatchObject({ state: 'down', lastError: expect.stringMatching(/ECONNREFUSED|ECONNRESET|closed/) });

      await waitUntil(async () => (await sentCount()) === FLOOD, {
        timeoutMs: FLOOD_DEADLINE_MS,
        intervalMs: 100,
        what: 'every mail ProviderSent',
      });
      const deliveredAt = performance.now();
      const cpu = process.cpuUsage(cpuAtStart);
      await waitUntil(async () => (await alertOf()).state === 'firing', { timeoutMs: 15_000, intervalMs: 100, what: 'relay_down firing' });
      expect((await alertOf()).summary).toContain('Relay primary is down');

      // Exactly once, as the peers count: every Message-ID of the flood in one dump, across both peers.
      const db = outbox.store.db;
      const rows = await db.selectFrom('mails').select(['id', 'message_id', 'status', 'attempts']).where('id', 'in', ids).execute();
      expect(rows.every((row) => row.status === MailStatus.ProviderSent)).toBe(true);
      const viaPrimary = primary.received(MARKER);
      const viaFallback = fallback.received(MARKER);
      const arrivals = new Map<string, number>();
      for (const id of [...viaPrimary, ...viaFallback]) arrivals.set(id, (arrivals.get(id) ?? 0) + 1);
      const twice = [...arrivals].filter(([, n]) => n > 1).map(([id]) => id);
      // A failover itself never sends twice. A mail whose message the primary had read when it died may be in its
      // dump and then be sent again (smtp-sink writes the dump just before its 250): at-least-once allows that for
      // the mails in flight at the crash, and only for those retried on their backoff (checked below).
      const inFlightAtKill = new Set(rows.filter((row) => row.attempts !== 1).map((row) => row.message_id));
      expect(
        twice.filter((id) => !inFlightAtKill.has(id)),
        'Message-IDs that arrived more than once without having been in flight at the kill',
      ).toEqual([]);
      expect(rows.filter((row) => (arrivals.get(row.message_id) ?? 0) < 1).map((row) => row.message_id)).toEqual([]);
      expect(viaPrimary.length + viaFallback.length).toBe(FLOOD + twice.length);
      expect(takenBeforeKill).toBeGreaterThanOrEqual(KILL_AT - 10);
      expect(viaFallback.length).toBeGreaterThan(FLOOD / 2);

      // The mails that failed over spent no retry budget: one attempt each, the fallback named as the relay that took it.
      const sentEvents = await db
        .selectFrom('mail_events')
        .select(['mail_id', 'detail'])
        .where('mail_id', 'in', ids)
        .where('type', '=', 'sent')
        .execute();
      const trails = new Map(
        sentEvents.map((event) => [
          event.mail_id,
          JSON.parse(event.detail ?? '{}') as { relay?: string; passedOver?: Array<{ relay: string; reply: string }> },
        ]),
      );
      const attemptsOf = new Map(rows.map((row) => [row.id, row.attempts]));
      const failedOver = ids.filter((id) => trails.get(id)?.passedOver?.some((step) => step.relay === 'primary'));
      expect(failedOver.length).toBeGreaterThan(0);
      // Exactly one attempt each beyond its retries on backoff: a mail whose message the primary had when it died is
      // retried (below), and its next attempt may still pass over the primary, down by then; the move cost nothing.
      const backoffRetries = new Map<number, number>();
      for (const event of await db
        .selectFrom('mail_events')
        .select('mail_id')
        .where('mail_id', 'in', failedOver)
        .where('type', '=', 'unreachable-retry')
        .execute())
        backoffRetries.set(event.mail_id, (backoffRetries.get(event.mail_id) ?? 0) + 1);
      expect(failedOver.filter((id) => attemptsOf.get(id) !== 1 + (backoffRetries.get(id) ?? 0))).toEqual([]);
      expect(failedOver.every((id) => trails.get(id)?.relay === 'fallback')).toBe(true);
      // Those with more than one attempt had handed their message to the primary when it died, so it may have taken
      // them: retried on their backoff, as without routes. At most one per connection to it (5, the default).
      const retried = ids.filter((id) => attemptsOf.get(id) !== 1);
      expect(retried.length).toBeLessThanOrEqual(5);
      const retryEvents = await db
        .selectFrom('mail_events')
        .select(['mail_id', 'type', 'detail'])
        .where('mail_id', 'in', retried.length > 0 ? retried : [-1])
        .where('type', '!=', 'accepted')
        .orderBy('id')
        .execute();
      for (const id of retried)
        expect(retryEvents.filter((e) => e.mail_id === id).map((e) => [e.type, JSON.parse(e.detail ?? '{}').relay])).toEqual([
          ['unreachable-retry', 'primary'],
          ['sent', 'fallback'],
        ]);

      // Back on its port: a probe finds it (1 s after it went down, then 2 s, 4 s…), and its mails return to it.
      const back = await startSmtpSink({ port: primary.port });
      const restartedAt = Date.now();
      await waitUntil(
        async () => {
          if (back.received(MARKER).length > 0) return true;
          await submit(1, 'probe');
          return false;
        },
        { timeoutMs: 70_000, intervalMs: 250, what: 'a mail through the restarted primary' },
      );
      const returnedAfterMs = Date.now() - restartedAt;
      await waitUntil(async () => (await relayOf('primary')).state === 'up', { timeoutMs: 5_000, what: 'the primary up again' });
      const fallbackBefore = fallback.received(MARKER).length;
      const afterIds = await submit(200, 'after');
      await waitUntil(async () => (await sentCount()) === submitted, { timeoutMs: 30_000, intervalMs: 100, what: 'the mails after' });
      const afterRows = await db.selectFrom('mails').select(['message_id']).where('id', 'in', afterIds).execute();
      const backIds = new Set(back.received(MARKER));
      expect(afterRows.filter((row) => !backIds.has(row.message_id))).toEqual([]);
      expect(fallback.received(MARKER).length).toBe(fallbackBefore);
      await waitUntil(async () => (await alertOf()).state === 'resolved', {
        timeoutMs: 15_000,
        intervalMs: 100,
        what: 'relay_down resolved',
      });

      // One line of figures, read by bench/failover.ts.
      console.info(
        `failover proof figures: ${JSON.stringify({
          flood: FLOOD,
          submittedMs: Math.round(submittedAt - startedAt),
          allSentMs: Math.round(deliveredAt - startedAt),
          cpuMs: Math.round((cpu.user + cpu.system) / 1000),
          takenBeforeKill,
          downAfterMs,
          viaPrimary: viaPrimary.length,
          viaFallback: viaFallback.length,
          failedOverInAttempt: failedOver.length,
          retriedOnBackoff: retried.length,
          sentTwice: twice.length,
          trafficBackMs: returnedAfterMs,
        })}`,
      );
    },
    2 * FLOOD_DEADLINE_MS + 120_000,
  );
});
