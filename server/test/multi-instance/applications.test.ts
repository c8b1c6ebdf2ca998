/**
 * Applications across instances on one PostgreSQL (runs only in the suite's PostgreSQL half): a key revoked on
 * instance A is refused by instance B at its very next request, over HTTP and at SMTP AUTH alike, though B had just
 * accepted it; so is a key rotated away with no grace, and an old key the moment its grace ends, while during the
 * grace both keys submit on B by either way. B is never told: it asks the store for every key
 * (docs/decisions.md#api-keys-looked-up-on-every-request).
 */
import type { ApplicationWithKey } from '@outbox/contract';
import nodemailer from 'nodemailer';
import { afterEach, beforeEach, describe, expect, it, onTestFailed } from 'vitest';
import { freePort } from '../support/net.js';
import { freshEnvironment, killAllSpawned, spawnOutbox, type OutboxEnvironment, type OutboxProcess } from '../support/outbox-process.js';

let environment: OutboxEnvironment;
let processes: OutboxProcess[] = [];

beforeEach(async () => {
  environment = await freshEnvironment();
  onTestFailed(() => {
    for (const p of processes) console.log(`--- instance pid ${p.child.pid} ---\n${p.output().split('\n').slice(-15).join('\n')}`);
  });
});

afterEach(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  processes = [];
  await killAllSpawned();
  await environment.dispose();
});

async function login(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: environment.env.OUTBOX_ADMIN_USER, password: environment.env.OUTBOX_ADMIN_PASSWORD }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Array<{ token: string }> }).data[0]!.token;
}

async function operatorCall(baseUrl: string, token: string, path: string, body?: unknown): Promise<ApplicationWithKey> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Token ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
  const text = await response.text();
  expect(response.status, text).toBeLessThan(300);
  return (JSON.parse(text) as { data: ApplicationWithKey[] }).data[0]!;
}

async function submit(baseUrl: string, key: string): Promise<number> {
  const response = await fetch(`${baseUrl}/api/v1/mail`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Token ${key}` },
    body: JSON.stringify({ fromMail: 'shop@example.com', to: [{ recipientMail: 'ann@example.net' }], subject: 'hi', text: 'hi' }),
  });
  await response.arrayBuffer();
  return response.status;
}

/**
 * One mail over SMTP with a real client (nodemailer), the key as the AUTH password, on a connection of its own:
 * the reply code of the message (250) or of the command that refused it (535 at AUTH for an unknown key).
 */
async function submitOverSmtp(port: number, key: string): Promise<number> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    auth: { user: 'app', pass: key },
  });
  try {
    const info = (await transport.sendMail({ from: 'shop@example.com', to: 'ann@example.net', subject: 'hi', text: 'hi' })) as {
      response: string;
    };
    return Number(info.response.slice(0, 3));
  } catch (error) {
    const code = (error as { responseCode?: number }).responseCode;
    if (code === undefined) throw error;
    return code;
  } finally {
    transport.close();
  }
}

describe('applications across instances', () => {
  it('a revocation or a rotation on instance A holds on instance B at its next request, over HTTP and SMTP', async () => {
    const smtpPortOfB = await freePort();
    const [a, b] = await Promise.all([
      spawnOutbox({ ...environment.env, WORKER: 'off', SMTP_PORT: 'off' }),
      spawnOutbox({ ...environment.env, WORKER: 'off', SMTP_PORT: String(smtpPortOfB) }),
    ]);
    processes = [a!, b!];
    const token = await login(a!.baseUrl);

    // Over SMTP too: B accepts the key at AUTH, A revokes it, and B's next AUTH with it is refused (535).
    const shop = await operatorCall(a!.baseUrl, token, '/api/v1/applications', { name: 'smtp-shop' });
    expect(await submit(b!.baseUrl, shop.key)).toBe(202);
    expect(await submitOverSmtp(smtpPortOfB, shop.key)).toBe(250);
    await operatorCall(a!.baseUrl, token, `/api/v1/applications/${shop.id}/revoke`);
    expect(await submitOverSmtp(smtpPortOfB, shop.key)).toBe(535);
    expect(await submit(b!.baseUrl, shop.key)).toBe(401);

    // Several rounds: each time B accepts the key a moment before A revokes it, then refuses it straight after.
    for (let round = 0; round < 5; round++) {
      const created = await operatorCall(a!.baseUrl, token, '/api/v1/applications', { name: `shop-${round}` });
      expect(await submit(b!.baseUrl, created.key)).toBe(202);
      expect(await submit(b!.baseUrl, created.key)).toBe(202);
      await operatorCall(a!.baseUrl, token, `/api/v1/applications/${created.id}/revoke`);
      expect(await submit(b!.baseUrl, created.key), `round ${round}`).toBe(401);
      expect(await submit(a!.baseUrl, created.key)).toBe(401);
    }

    // A rotation with no grace: the old key is refused on B at once, the new one accepted there at once.
    const app = await operatorCall(a!.baseUrl, token, '/api/v1/applications', { name: 'crm' });
    expect(await submit(b!.baseUrl, app.key)).toBe(202);
    const rotated = await operatorCall(a!.baseUrl, token, `/api/v1/applications/${app.id}/rotate`, { graceSeconds: 0 });
    expect(await submit(b!.baseUrl, app.key)).toBe(401);
    expect(await submitOverSmtp(smtpPortOfB, app.key)).toBe(535);
    expect(await submit(b!.baseUrl, rotated.key)).toBe(202);
    expect(await submitOverSmtp(smtpPortOfB, rotated.key)).toBe(250);

    // With a grace: the old key works on B until the instant the answer named, and is refused from then on.
    // The grace is long enough for the four submissions on a loaded machine; the wait for its end is to the instant.
    const graced = await operatorCall(a!.baseUrl, token, `/api/v1/applications/${app.id}/rotate`, { graceSeconds: 15 });
    const expiresAt = Date.parse(graced.previousKeyExpiresAt!);
    expect(await submit(b!.baseUrl, rotated.key)).toBe(202);
    expect(await submitOverSmtp(smtpPortOfB, rotated.key)).toBe(250);
    expect(await submit(b!.baseUrl, graced.key)).toBe(202);
    expect(await submitOverSmtp(smtpPortOfB, graced.key)).toBe(250);
    expect(Date.now(), 'the submissions in the grace ended within it').toBeLessThan(expiresAt);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now() + 5)));
    expect(await submit(b!.baseUrl, rotated.key)).toBe(401);
    expect(await submitOverSmtp(smtpPortOfB, rotated.key)).toBe(535);
    expect(await submit(b!.baseUrl, graced.key)).toBe(202);
    expect(await submitOverSmtp(smtpPortOfB, graced.key)).toBe(250);
    // Two server processes start first: over 30 s together at load 25 on two cores.
  }, 120_000);
});
