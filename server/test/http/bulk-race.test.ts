/**
 * A bulk dequeue racing a running worker that delivers to a real relay on loopback, by ids and by filter:
 * every mail ends in exactly one of moved (Dequeued, never delivered) or skipped (the worker had it), on the
 * engine under test (OUTBOX_TEST_ENGINE: SQLite, or PostgreSQL with its FOR UPDATE SKIP LOCKED claim).
 */
import { MailStatus, type BulkResult, type MailDetail } from '@outbox/contract';
import { afterEach, expect, it } from 'vitest';
import type { RunningOutbox } from '../../src/main.js';
import { waitUntil } from '../support/net.js';
import { freshEnvironment, startInProcess, type OutboxEnvironment } from '../support/outbox-process.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';

let relay: TestRelay | undefined;
let environment: OutboxEnvironment | undefined;
let running: RunningOutbox | undefined;

afterEach(async () => {
  await running?.stop();
  await relay?.close();
  await environment?.dispose();
});

for (const form of ['ids', 'filter'] as const)
  it(`bulk dequeue by ${form} against a delivering worker: each mail is moved or skipped, exactly once, and no moved mail is delivered`, async () => {
    relay = await startTestRelay();
    // A slow provider keeps the worker busy for the whole race rather than done before the bulk request lands,
    // and keeps a leased mail Processing long enough that the skip reason, read just after the chunk's
    // conditional update, still says so (with 40 ms a loaded CI machine finished every leased mail in between).
    relay.delayMs = 250;
    environment = await freshEnvironment({ RELAY_URL: relay.url, WORKER_CONCURRENCY: '4' });
    running = await startInProcess(environment.env);
    const baseUrl = `http://127.0.0.1:${running.httpPort}`;
    const apiKey = await running.services.auth.createApiKey('shop');
    const login = await fetch(`${baseUrl}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
    });
    const token = ((await login.json()) as { data: Array<{ token: string }> }).data[0]!.token;

    const total = 300;
    const submitted = await fetch(`${baseUrl}/api/v1/mail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${apiKey}` },
      body: JSON.stringify(
        Array.from({ length: total }, (_, i) => ({
          fromMail: 'shop@example.com',
          to: [{ recipientMail: `ann${i}@example.net` }],
          subject: `bulkrace ${i}`,
          text: 'hello',
        })),
      ),
    });
    expect(submitted.status).toBe(202);
    const ids = ((await submitted.json()) as { data: Array<{ id: number }> }).data.map((m) => m.id);
    // Strike while the worker holds mails (Processing) and has sent some, so that both kinds of skip happen.
    await waitUntil(
      async () => relay!.received.length >= 5 && ((await running!.services.mails.queueHealth()).counts[MailStatus.Processing] ?? 0) > 0,
      { timeoutMs: 10_000, intervalMs: 2 },
    );

    const response = await fetch(`${baseUrl}/api/v1/mail/bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${token}` },
      // The filter form walks the mails in chunks while the worker keeps claiming between them.
      body: JSON.stringify(
        form === 'ids' ? { action: 'dequeue', ids } : { action: 'dequeue', filter: { q: 'bulkrace' }, expectedCount: total },
      ),
    });
    expect(response.status).toBe(200);
    const result = ((await response.json()) as { data: BulkResult[] }).data[0]!;
    const skippedCount = result.skipped.reduce((sum, s) => sum + s.count, 0);
    expect(result.done + skippedCount).toBe(total);
    expect(result.done).toBeGreaterThan(0);
    expect(skippedCount).toBeGreaterThan(0);
    for (const s of result.skipped) expect(['processing', 'provider_sent']).toContain(s.reason);
    expect(result.skipped.find((s) => s.reason === 'processing')?.count ?? 0).toBeGreaterThan(0);

    // The worker finishes what it holds; nothing is left Queued or Processing.
    await waitUntil(
      async () => {
        const counts = (await running!.services.mails.queueHealth()).counts;
        return (counts[MailStatus.Queued] ?? 0) === 0 && (counts[MailStatus.Processing] ?? 0) === 0;
      },
      { timeoutMs: 30_000 },
    );
    const details: MailDetail[] = await Promise.all(ids.map((id) => running!.services.mails.getMailDetail(id)));
    const delivered = new Set(relay.received.map((m) => m.messageId));
    const dequeued = details.filter((m) => m.status === MailStatus.Dequeued);
    expect(dequeued).toHaveLength(result.done);
    for (const mail of dequeued) {
      expect(delivered.has(mail.messageId), `mail ${mail.id} was dequeued and delivered`).toBe(false);
      expect(mail.events.filter((e) => e.type === 'dequeued').map((e) => e.actor)).toEqual(['operator:ops']);
    }
    // Every skipped mail was the worker's: delivered exactly once.
    const others = details.filter((m) => m.status !== MailStatus.Dequeued);
    expect(others).toHaveLength(skippedCount);
    for (const mail of others) {
      expect(mail.status).toBe(MailStatus.ProviderSent);
      expect(relay.received.filter((m) => m.messageId === mail.messageId)).toHaveLength(1);
    }
    const listedSkips = new Set(result.skipped.flatMap((s) => s.ids));
    for (const mail of dequeued) expect(listedSkips.has(mail.id)).toBe(false);
  }, 60_000);
