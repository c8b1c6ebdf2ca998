/**
 * What the applications' events cost the worker: a group commit of 50 delivery outcomes, with the application
 * events written (the product) and without (`applicationEvents: false`, the same code path otherwise),
 * alternating batch by batch so both see the same machine. It runs the worker's own path: the claim of
 * delivery/delivery.repository.ts (`claimDueMails`, in a transaction of its own as the worker's idle claim) and the
 * outcome commit of delivery/outcome-commit.ts (decisions, recipients, transitions, counters and statistics in
 * one transaction), fed what the claim returned as the worker feeds it. Prints the wall time per commit and the
 * process CPU per outcome (on SQLite the store's work is in this process; on PostgreSQL the server's is not), and
 * checks through the events' own read (`listMailApplicationEvents`) that a batch with events wrote one more per mail.
 *
 *   npx tsx bench/events.ts [--mails 5000] [--engine sqlite|postgres|all]
 */
import type { SubmitMailRequest } from '@outbox/contract';
import { createAuthService } from '../server/src/auth/auth.service.js';
import { ManualClock } from '../server/src/clock.js';
import { createOutcomeCommit } from '../server/src/delivery/outcome-commit.js';
import { claimDueMails } from '../server/src/delivery/delivery.repository.js';
import { createRetryPolicy } from '../server/src/delivery/retry-policy.js';
import { listMailApplicationEvents } from '../server/src/events/application-events.repository.js';
import { createMailService } from '../server/src/mail/mail.service.js';
import { createSubmissionService } from '../server/src/submission/submission.service.js';
import type { Store } from '../server/src/store/connection.js';
import { printSetup, printTable, writeResult } from './support/common.js';
import { enginesOption, parseBenchArgs, resolveEngines, wholeNumberOption } from './support/options.js';
import { queueMails } from './support/mails.js';
import { openScratchStore } from './support/scratch-store.js';

const { mails: MAILS, engine: engineChoice } = parseBenchArgs({
  mails: wholeNumberOption(5000),
  engine: enginesOption('all', ['sqlite', 'postgres', 'all']),
});
const BATCH = 50;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(store: Store): Promise<Record<'on' | 'off', { wallMs: number; cpuUsPerOutcome: number }>> {
  const clock = new ManualClock(Date.parse('2026-11-26T10:00:00Z'));
  const auth = createAuthService({ store, clock, sessionTtlSeconds: 3600 });
  const principal = (await auth.findApiKeyPrincipal(await auth.createApiKey('bench')))!;
  const submissions = createSubmissionService({ store, clock, mails: createMailService({ store, clock }) });
  const request = (i: number): SubmitMailRequest => ({
    fromMail: 'shop@example.com',
    to: [
      { recipientName: 'Ann', recipientMail: `ann${i}@example.net` },
      { recipientName: 'Bob', recipientMail: `bob${i}@example.net` },
    ],
    subject: `Order ${i}`,
    text: 'Thanks!',
    idempotencyKey: `order-${i}`,
  });
  await queueMails(submissions, principal, MAILS, { mailAt: request });
  const retryPolicy = createRetryPolicy();
  // One commit per mode, each writing a batch at once (a full group commits without waiting: batchSize).
  let committed = 0;
  let moved = 0;
  const commitFor = (applicationEvents: boolean) =>
    createOutcomeCommit({
      store,
      retryPolicy,
      workerId: 'bench',
      batchSize: BATCH,
      flushDelayMs: 60_000,
      now: () => clock.now(),
      onSettled: () => undefined,
      onCommitted: () => (committed += 1),
      onChange: (ids) => (moved += ids.length),
      applicationEvents,
    });
  const commits = { on: commitFor(true), off: commitFor(false) };
  const samples = { on: { wall: [] as number[], cpu: [] as number[] }, off: { wall: [] as number[], cpu: [] as number[] } };
  const firstOf = { on: undefined as number | undefined, off: undefined as number | undefined };
  let rounds = 0;
  for (let round = 0; ; round++) {
    const at = clock.now();
    const claimed = await store.db
      .transaction()
      .execute((trx) => claimDueMails(trx, store.engine, { now: at, limit: BATCH, owner: 'bench', leaseExpiresAt: at + 60_000 }));
    if (claimed.length < BATCH) break;
    const mode = round % 2 === 0 ? 'on' : 'off';
    firstOf[mode] ??= claimed[0]!.id;
    const before = { committed, moved };
    const cpu = process.cpuUsage();
    const began = performance.now();
    for (const { payload, ...mail } of claimed)
      commits[mode].record({
        mail,
        outcome: { kind: 'sent', reply: '250 2.0.0 OK', accepted: [], rejected: [], durationMs: 3 },
        at,
        ...(payload ? { recipients: { all: payload.recipients, targets: payload.envelopeTo } } : {}),
      });
    await commits[mode].flush();
    const used = process.cpuUsage(cpu);
    samples[mode].wall.push(performance.now() - began);
    samples[mode].cpu.push((used.user + used.system) / BATCH);
    if (committed - before.committed !== 1) throw new Error(`a batch took ${committed - before.committed} commits, not one`);
    if (moved - before.moved !== BATCH) throw new Error(`only ${moved - before.moved} of ${BATCH} outcomes recorded`);
    rounds = round + 1;
  }
  if (rounds < 2) throw new Error('too few mails for a batch of each mode: raise --mails');
  // A mail of a batch with events has its mail.sent beside its mail.queued; one without, its mail.queued alone.
  const eventsOf = async (id: number) => (await listMailApplicationEvents(store.db, id)).map((event) => event.type);
  const [on, off] = [await eventsOf(firstOf.on!), await eventsOf(firstOf.off!)];
  if (on.length !== off.length + 1 || !on.includes('mail.sent') || off.includes('mail.sent'))
    throw new Error(`events with and without: ${on.join(',')} / ${off.join(',')}`);
  return {
    on: { wallMs: median(samples.on.wall), cpuUsPerOutcome: median(samples.on.cpu) },
    off: { wallMs: median(samples.off.wall), cpuUsPerOutcome: median(samples.off.cpu) },
  };
}

const engines = await resolveEngines(engineChoice, { withoutPostgres: 'skip' });
const setup = printSetup('Application events: the cost of a group commit of 50 delivery outcomes, events on vs off, alternating', {
  engine: engines.join('+'),
  mails: MAILS,
  batch: BATCH,
});
const rows: Array<Array<string | number>> = [];
const figures: Record<string, unknown> = {};
for (const engine of engines) {
  const scratch = await openScratchStore(engine, 'events');
  const { store } = scratch;
  try {
    const result = await measure(store);
    figures[engine] = result;
    rows.push([
      engine,
      result.off.wallMs.toFixed(2),
      result.on.wallMs.toFixed(2),
      Math.round(result.off.cpuUsPerOutcome),
      Math.round(result.on.cpuUsPerOutcome),
      `${Math.round(result.on.cpuUsPerOutcome - result.off.cpuUsPerOutcome)} µs`,
    ]);
  } finally {
    await scratch.close();
  }
}
printTable(['engine', 'commit ms (off)', 'commit ms (on)', 'CPU µs/outcome (off)', 'CPU µs/outcome (on)', 'events cost'], rows);
console.log(`result: ${writeResult('events', setup, figures)}`);
