/**
 * `relay add|list|remove` on the command line, and a named relay used by a running server (main.ts's wiring): the
 * CLI adds the relay, a route sends every mail to it, and a mail submitted over HTTP reaches it, not RELAY_URL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let environment: OutboxEnvironment | undefined;
let running: Awaited<ReturnType<typeof startInProcess>> | undefined;
const relays: TestRelay[] = [];

afterEach(async () => {
  await running?.stop();
  running = undefined;
  await environment?.dispose();
  environment = undefined;
  for (const relay of relays.splice(0)) await relay.close();
});

describe('relay commands', () => {
  it('add, list and remove relays; a running server sends through the named relay its route names', async () => {
    const fallback = await startTestRelay();
    const named = await startTestRelay();
    relays.push(fallback, named);
    environment = await freshEnvironment({ RELAY_URL: fallback.url });
    const { env } = environment;

    const added = await cli(['relay', 'add', 'eu', named.url, '--max-per-second', '50', '--max-connections', '2'], env);
    expect(added, added.stderr).toMatchObject({ code: 0, stdout: expect.stringContaining('Relay eu added: smtp://127.0.0.1:') });
    const withLogin = await cli(['relay', 'add', 'us', 'smtps://mailer:s3cr3t-pw@relay.us.example:465'], env);
    expect(withLogin.stdout).toContain('Relay us added: smtps://relay.us.example:465, tls require, login kept apart.');
    const list = await cli(['relay', 'list'], env);
    expect(list.stdout).toContain('eu  smtp://127.0.0.1:');
    expect(list.stdout).toContain('50/s');
    expect(list.stdout).toContain('us  smtps://relay.us.example:465  tls require  login set');
    expect(list.stdout).not.toContain('s3cr3t-pw');
    expect((await cli(['relay', 'add', 'eu', named.url], env)).stderr).toContain('A relay named eu exists already');
    expect((await cli(['relay', 'add', 'x', named.url, '--tls', 'maybe'], env)).stderr).toContain(
      '--tls must be require, opportunistic or off.',
    );

    const key = (await cli(['apikey', 'create', 'shop'], env)).stdout.trim().split('\n').at(-1)!;
    running = await startInProcess(env);
    await running.services.relays.replaceRoutes([{ match: {}, relays: ['eu', 'default'] }], 'operator:test');
    const response = await fetch(`http://127.0.0.1:${running.httpPort}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${key}` },
      body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'routed', text: 'hi' }),
    });
    expect(response.status).toBe(202);
    await expect.poll(() => named.received.length, { timeout: 60_000, interval: 50 }).toBe(1);
    expect(fallback.received).toHaveLength(0);

    const refused = await cli(['relay', 'remove', 'eu'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Relay eu is named by route 0; change the routes first.');
    await running.services.relays.replaceRoutes([], 'operator:test');
    expect((await cli(['relay', 'remove', 'eu'], env)).stdout).toContain('Relay eu removed.');
    expect((await cli(['relay', 'list'], env)).stdout).not.toContain('eu  ');
  }, 180_000);
});
