/**
 * `npm run outbox -- webhook …` beside a running server: `add` as a user runs it (a child process, the secret
 * on the last line), the other commands through `runCli` in this process (the same code, without paying a
 * process start for each); the running server delivers what the command line queued.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import type { RunningOutbox } from '../../src/main.js';
import { cliProcess } from '../support/cli.js';
import { waitUntil } from '../support/net.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { startReceiver, verify, type Receiver } from './receiver.js';

let environment: OutboxEnvironment;
let running: RunningOutbox;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  environment = await freshEnvironment({ WEBHOOK_ALLOW_PRIVATE: 'true', SMTP_PORT: '0' });
  running = await startInProcess(environment.env);
});
afterAll(async () => {
  await running?.stop();
  await receiver?.close();
  await environment?.dispose();
});

/** The command as its own process (the run's bundle, support/cli.ts), with this installation's environment. */
const spawnCli = (args: string[]) => cliProcess(args, environment.env);

/** runCli with this installation's environment; answers what it printed. */
async function cli(...args: string[]): Promise<string> {
  const saved = { ...process.env };
  Object.assign(process.env, environment.env);
  const lines: string[] = [];
  try {
    await runCli(args, (line) => lines.push(line));
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
  return lines.join('\n');
}

it('add, list, test, deliveries, rotate, disable, enable and remove', async () => {
  const added = await spawnCli(['webhook', 'add', receiver.url, '--events', 'mail.sent,mail.failed', '--description', 'CRM']);
  expect(added.code, added.stderr).toBe(0);
  const secret = added.stdout.trim().split('\n').at(-1)!;
  expect(secret).toMatch(/^whsec_/);
  const id = /^(\d+) {2}/m.exec(added.stdout)![1]!;

  expect(await cli('webhook', 'list')).toMatch(
    new RegExp(`${id} {2}${receiver.url} {2}enabled\\n {4}events: mail.sent, mail.failed; application: all; no attempts in 24 h\\n {4}CRM`),
  );

  expect(await cli('webhook', 'test', id)).toMatch(/^Test event evt_\w+ queued/);
  await waitUntil(() => receiver.requests.length === 1, { what: 'the test event from the running server' });
  expect(verify(secret, receiver.requests[0]!)).toMatchObject({ type: 'webhook.test' });
  await waitUntil(async () => (await cli('webhook', 'deliveries', id)).includes('succeeded'), { what: 'the delivery recorded' });
  expect(await cli('webhook', 'deliveries', id)).toMatch(/webhook\.test {2}evt_\w+ {2}succeeded\n {4}\S+ {2}200 {2}\d+ ms/);

  const rotated = await cli('webhook', 'rotate', id);
  expect(rotated.split('\n').at(-1)).toMatch(/^whsec_/);
  expect(rotated.split('\n').at(-1)).not.toBe(secret);

  expect(await cli('webhook', 'disable', id)).toBe(`Endpoint ${id} disabled.`);
  expect(await cli('webhook', 'list')).toContain('disabled (operator)');
  expect(await cli('webhook', 'enable', id)).toBe(`Endpoint ${id} enabled.`);
  expect(await cli('webhook', 'remove', id)).toBe(`Endpoint ${id} (${receiver.url}) removed with its delivery log.`);
  expect(await cli('webhook', 'list')).toMatch(/^No webhook endpoints/);
}, 90_000);

it('refuses an unknown event type, an unknown application and a missing id, naming what was wrong', async () => {
  await expect(cli('webhook', 'add', receiver.url, '--events', 'mail.sent,mail.exploded')).rejects.toThrow(
    /--events: unknown event type mail\.exploded/,
  );
  await expect(cli('webhook', 'add', receiver.url, '--application', 'nobody')).rejects.toThrow(/No active API key is named nobody/);
  await expect(cli('webhook', 'remove')).rejects.toThrow(/needs the endpoint's ID/);
  await expect(cli('webhook', 'remove', '999')).rejects.toThrow(/No webhook endpoint has id 999/);
});
