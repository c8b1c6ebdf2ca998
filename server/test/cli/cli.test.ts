/**
 * The operators' command line as a user runs it (`npm run outbox -- ...` is `tsx src/cli/main.ts`) on a fresh
 * DATA_DIR (or a fresh PostgreSQL database), checked through the store and the API. The first test runs it once as
 * a real process (standard input, exit status, stderr); the others call the same `runCli` in this process
 * (test/support/cli.ts), which saves a Node start per command.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MailStatus } from '@outbox/contract';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { cli, cliProcess } from '../support/cli.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let environment: OutboxEnvironment | undefined;
let running: RunningOutbox | undefined;
let relay: TestRelay | undefined;

afterEach(async () => {
  await running?.stop();
  running = undefined;
  await relay?.close();
  relay = undefined;
  await environment?.dispose();
  environment = undefined;
});

describe('CLI', () => {
  it('user add / passwd / remove with --password-stdin on a fresh DATA_DIR; the operator can log in, then cannot', async () => {
    // An empty store: the CLI creates and migrates it, as on a first run. The second command runs as a real
    // process: the password read from its standard input, the refusal on stderr and exit status 1.
    environment = await freshEnvironment({ OUTBOX_ADMIN_USER: '', OUTBOX_ADMIN_PASSWORD: '' }, { emptyStore: true });
    const { env } = environment;
    expect(await cli(['user', 'add', 'maria', '--password-stdin'], env, 'first password 1\n')).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('Operator maria created.'),
    });
    expect(await cliProcess(['user', 'add', 'maria', '--password-stdin'], env, 'first password 1\n')).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/exists/),
    });
    expect((await cli(['user', 'passwd', 'maria', '--password-stdin'], env, 'second password 2\n')).code).toBe(0);

    running = await startInProcess(env);
    const login = (password: string) =>
      fetch(`http://127.0.0.1:${running!.httpPort}/api/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'maria', password }),
      });
    expect((await login('first password 1')).status).toBe(401);
    expect((await login('second password 2')).status).toBe(200);
    expect((await cli(['user', 'remove', 'maria'], env)).code).toBe(0);
    expect((await login('second password 2')).status).toBe(401);
    // Six password hashes at the product's cost (the CLI and the server as they ship; ~0.4 s each while that
    // was scrypt 2^17), migrations from empty and a child process: it took 63 s at load 30 on two cores then.
  }, 180_000);

  it('apikey create prints the key alone on the last line; it submits mail until apikey revoke, refused at once; both audited', async () => {
    environment = await freshEnvironment();
    const created = await cli(['apikey', 'create', 'shop'], environment.env);
    expect(created.code).toBe(0);
    const key = created.stdout.trim().split('\n').at(-1)!;
    expect(key).toMatch(/^obx_[A-Za-z0-9_-]{40,}$/);

    running = await startInProcess(environment.env);
    const submit = () =>
      fetch(`http://127.0.0.1:${running!.httpPort}/api/v1/mail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Token ${key}` },
        body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'hi', text: 'hi' }),
      });
    expect((await submit()).status).toBe(202);
    expect((await cli(['apikey', 'revoke', 'shop'], environment.env)).code).toBe(0);
    // The server asks the store for every key: the revocation another process made holds at the next request.
    expect((await submit()).status).toBe(401);
    const audit = await running.store.db
      .selectFrom('audit_log')
      .select(['actor', 'action', 'target'])
      .where('action', 'like', 'apikey.%')
      .orderBy('id')
      .execute();
    expect(audit).toEqual([
      { actor: 'cli', action: 'apikey.create', target: 'shop' },
      { actor: 'cli', action: 'apikey.revoke', target: 'shop' },
    ]);
  }, 60_000);

  it('demo --count fills the store with mails over all six statuses, beside a running server', async () => {
    // ALERTS off: the command runs in this process (test/support/cli.ts), and better-sqlite3 waits for a lock
    // synchronously, so it would wait out its busy timeout on an alert round it blocks from finishing. As
    // separate processes (npm run outbox beside npm start) they simply take turns.
    environment = await freshEnvironment({ WORKER: 'off', ALERTS: 'off' });
    running = await startInProcess(environment.env);
    // 300 mails show every status as 3,000 did (one transaction either way: the demo inserts 5,000 at a time).
    const result = await cli(['demo', '--count', '300', '--seed', '7'], environment.env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Added 300 demo mails/);
    const { meta } = await running.services.mails.listMails({ limit: 1 });
    expect(meta.total).toBe(300);
    for (const status of [0, 1, 2, 3, 4, 5]) expect(meta.counts[status], `status ${status}`).toBeGreaterThan(0);
  }, 60_000);

  it('demo --send submits mails through the real pipeline: the running worker delivers them, refusals and deferrals included', async () => {
    relay = await startTestRelay();
    relay.answer = (message) => {
      if (message.rcptTo.some((r) => r.endsWith('@reject.test'))) return { code: 550, message: '5.1.1 rejected' };
      if (message.rcptTo.some((r) => r.endsWith('@defer.test'))) return { code: 451, message: '4.3.0 later' };
      return { accept: true };
    };
    environment = await freshEnvironment({ RELAY_URL: relay.url, RETRY_BASE_DELAY: '1h', ALERTS: 'off' });
    running = await startInProcess(environment.env);
    const result = await cli(['demo', '--count', '200', '--send', '--seed', '3'], environment.env);
    expect(result.code).toBe(0);
    // Done when every mail had its first attempt and none is in flight.
    await expect
      .poll(
        async () => {
          const waiting = await running!.store.db
            .selectFrom('mails')
            .select((eb) => eb.fn.countAll().as('n'))
            .where((eb) =>
              eb.or([eb('status', '=', MailStatus.Processing), eb.and([eb('status', '=', MailStatus.Queued), eb('attempts', '=', 0)])]),
            )
            .executeTakeFirstOrThrow();
          return Number(waiting.n);
        },
        // A deadline, not an expectation: at load 19 on two cores 3 of the 200 mails had no attempt at 20 s.
        { timeout: 90_000, interval: 100 },
      )
      .toBe(0);
    const { counts } = (await running.services.mails.listMails({ limit: 1 })).meta;
    expect(counts[MailStatus.ProviderSent]).toBeGreaterThan(150);
    expect(counts[MailStatus.ProviderError]).toBeGreaterThan(0); // reject.test
    expect(counts[MailStatus.Queued]).toBeGreaterThan(0); // defer.test, waiting for its retry
    expect(relay.received.length).toBe(counts[MailStatus.ProviderSent]);
  }, 180_000);

  it('purge --older-than DAYS deletes finished and failed mails unchanged for that long, never Queued or Processing ones', async () => {
    environment = await freshEnvironment({ WORKER: 'off' });
    expect((await cli(['demo', '--count', '2000', '--seed', '11'], environment.env)).code).toBe(0);
    expect(await cli(['purge'], environment.env)).toMatchObject({ code: 1, stderr: expect.stringMatching(/--older-than DAYS/) });
    running = await startInProcess(environment.env);
    const before = await running.store.db.selectFrom('mails').select(['status', 'last_update_at']).execute();
    const cutoff = Date.now() - 14 * 86_400_000;
    const expectedGone = before.filter((m) => [1, 3, 4, 5].includes(m.status) && m.last_update_at < cutoff - 60_000).length;
    expect(expectedGone).toBeGreaterThan(100);

    const result = await cli(['purge', '--older-than', '14'], environment.env);
    expect(result.code).toBe(0);
    const purged = Number(/Purged ([\d,]+)/.exec(result.stdout)![1]!.replace(/,/g, ''));
    expect(purged).toBeGreaterThanOrEqual(expectedGone);

    const after = await running.store.db.selectFrom('mails').select(['status', 'last_update_at']).execute();
    expect(after).toHaveLength(before.length - purged);
    expect(after.filter((m) => m.status === 0 || m.status === 2)).toHaveLength(
      before.filter((m) => m.status === 0 || m.status === 2).length,
    );
    for (const mail of after) if ([1, 3, 4, 5].includes(mail.status)) expect(mail.last_update_at).toBeGreaterThanOrEqual(cutoff - 60_000);
    // The counters moved with the rows.
    const { meta } = await running.services.mails.listMails({ limit: 1 });
    expect(meta.total).toBe(after.length);
    // As they show: a stored Queued mail under a lease is Processing (mail/leases.ts).
    const leased = new Set(
      (await running.store.db.selectFrom('mail_queue').select('mail_id').where('lease_owner', 'is not', null).execute()).map((r) =>
        Number(r.mail_id),
      ),
    );
    const shown = (await running.store.db.selectFrom('mails').select(['id', 'status']).execute()).map((m) =>
      m.status === 0 && leased.has(Number(m.id)) ? 2 : m.status,
    );
    for (const status of [0, 1, 2, 3, 4, 5]) expect(meta.counts[status]).toBe(shown.filter((s) => s === status).length);
  }, 60_000);

  it('export from the embedded store, import into a new store of the engine under test: mails, contents, events, operators and API keys carry over', async () => {
    // The source is always the embedded SQLite store: the move this exists for is SQLite → PostgreSQL.
    const source = await freshEnvironment({ WORKER: 'off', DATABASE_URL: '' });
    const exportFile = path.join(source.dataDir, 'outbox-export.jsonl');
    try {
      expect((await cli(['demo', '--count', '1200', '--seed', '5'], source.env)).code).toBe(0);
      expect((await cli(['demo', '--count', '30', '--send', '--seed', '6'], source.env)).code).toBe(0);
      expect((await cli(['user', 'add', 'maria', '--password-stdin'], source.env, 'maria password 1\n')).code).toBe(0);
      const key = (await cli(['apikey', 'create', 'shop'], source.env)).stdout.trim().split('\n').at(-1)!;
      const exported = await cli(['export', '--out', exportFile], source.env);
      expect(exported).toMatchObject({ code: 0, stderr: expect.stringMatching(/Exported .*1,230 mails/) });
      // Every mail and operator is in it: readable by its owner only.
      expect(fs.statSync(exportFile).mode & 0o777).toBe(0o600);

      environment = await freshEnvironment({ WORKER: 'off', OUTBOX_ADMIN_USER: '', OUTBOX_ADMIN_PASSWORD: '' });
      const imported = await cli(['import', '--in', exportFile], environment.env);
      expect(imported).toMatchObject({ code: 0, stdout: expect.stringMatching(/Imported .*1,230 mails/) });
      // A second import into the now non-empty store is refused, and changes nothing.
      expect(await cli(['import', '--in', exportFile], environment.env)).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/holds mails already/),
      });

      const sourceRunning = await startInProcess(source.env);
      running = await startInProcess(environment.env);
      try {
        const before = await sourceRunning.services.mails.listMails({});
        const after = await running.services.mails.listMails({});
        expect(after.data).toEqual(before.data);
        expect(after.meta.counts).toEqual(before.meta.counts);
        const withContent = (await sourceRunning.store.db.selectFrom('mail_contents').select('mail_id').limit(1).executeTakeFirstOrThrow())
          .mail_id;
        expect(await running.services.mails.getMailDetail(withContent)).toEqual(
          await sourceRunning.services.mails.getMailDetail(withContent),
        );
        expect(
          (await running.services.mails.getRawMessage(withContent)).equals(await sourceRunning.services.mails.getRawMessage(withContent)),
        ).toBe(true);
      } finally {
        await sourceRunning.stop();
      }

      const base = `http://127.0.0.1:${running.httpPort}`;
      const login = await fetch(`${base}/api/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'maria', password: 'maria password 1' }),
      });
      expect(login.status).toBe(200);
      const submitted = await fetch(`${base}/api/v1/mail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Token ${key}` },
        body: JSON.stringify({
          fromMail: 'shop@example.com',
          to: [{ recipientMail: 'ann@example.net' }],
          subject: 'after the move',
          text: 'x',
        }),
      });
      expect(submitted.status).toBe(202);
      // New ids continue after the imported ones (PostgreSQL's sequences were moved past them).
      const [mail] = ((await submitted.json()) as { data: Array<{ id: number }> }).data;
      expect(mail!.id).toBeGreaterThan(1230);
    } finally {
      await source.dispose();
    }
  }, 90_000);
});
