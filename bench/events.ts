/**
 * What the applications' events cost the worker: a group commit of 50 delivery outcomes — the
 * recipients' UPDATE and `applyTransitions` in one transaction, as delivery/outcome-commit.ts does it — with
 * the application events written (the product) and without (`applicationEvents: false`, the same code path
 * otherwise), alternating batch by batch so both see the same machine. Prints the wall time per commit and
 * the process CPU per outcome (on SQLite the store's work is in this process; on PostgreSQL the server's is not).
 *
 *   npx tsx bench/events.ts [--mails 5000] [--engine sqlite|postgres|all]
 */
import { parseArgs } from 'node:util';
import { MailStatus, type SubmitMailRequest } from '@outbox/contract';
import { createAuthService } from '../server/src/auth/auth.service.js';
import { ManualClock } from '../server/src/clock.js';
import { decideAttempt } from '../server/src/delivery/outcome-policy.js';
import { recordRecipientOutcomes } from '../server/src/delivery/delivery.repository.js';
import { createRetryPolicy } from '../server/src/delivery/retry-policy.js';
import { claimTransition } from '../server/src/delivery/lease-transitions.js';
import { createMailService } from '../server/src/mail/mail.service.js';
import { createSubmissionService } from '../server/src/submission/submission.service.js';
import { applyTransitions } from '../server/src/mail/write/apply.js';
import { openStore, type Store } from '../server/src/store/connection.js';
import { describeSetup, makeTempDir, printTable, removeDir, setupLine, warnIfBusy, writeResult } from './support/common.js';
import { createScratchDatabase, postgresReachable } from './support/postgres.js';

const { values } = parseArgs({ options: { mails: { type: 'string', default: '5000' }, engine: { type: 'string', default: 'all' } } });
const MAILS = Number(values.mails);
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
  const ids: number[] = [];
  for (let start = 0; start < MAILS; start += 500) {
    const mails = await submissions.submitJson(
      principal,
      Array.from({ length: Math.min(500, MAILS - start) }, (_, i) => request(start + i)),
      true,
    );
    ids.push(...mails.map((m) => m.id));
  }
  const retryPolicy = createRetryPolicy();
  const samples = { on: { wall: [] as number[], cpu: [] as number[] }, off: { wall: [] as number[], cpu: [] as number[] } };
  for (let start = 0, round = 0; start + BATCH <= ids.length; start += BATCH, round++) {
    const batch = ids.slice(start, start + BATCH);
    const mode = round % 2 === 0 ? 'on' : 'off';
    const at = clock.now();
    const lease = { owner: 'bench', expiresAt: at + 60_000 };
    await store.db.transaction().execute((trx) =>
      applyTransitions(
        trx,
        batch.map((id) => claimTransition(id, at, lease)),
      ),
    );
    const decisions = batch.map((id, i) =>
      decideAttempt(
        {
          mail: { id, attempts: 1, received_at: at, lease_expires_at: lease.expiresAt },
          outcome: { kind: 'sent', reply: '250 2.0.0 OK', accepted: [], rejected: [], durationMs: 3 },
          at,
          recipients: {
            all: [
              { address: `ann${start + i}@example.net`, outcome: 'pending' },
              { address: `bob${start + i}@example.net`, outcome: 'pending' },
            ],
            targets: [`ann${start + i}@example.net`, `bob${start + i}@example.net`],
          },
        },
        retryPolicy,
        'bench',
      ),
    );
    const cpu = process.cpuUsage();
    const began = performance.now();
    const { moved } = await store.db.transaction().execute(async (trx) => {
      await recordRecipientOutcomes(
        trx,
        store.engine,
        decisions.flatMap((d) => d.recipients.map((u) => ({ ...u, leaseExpiresAt: lease.expiresAt }))),
        'bench',
        at,
      );
      return applyTransitions(
        trx,
        decisions.map((d) => d.transition),
        { applicationEvents: mode === 'on' },
      );
    });
    const used = process.cpuUsage(cpu);
    samples[mode].wall.push(performance.now() - began);
    samples[mode].cpu.push((used.user + used.system) / BATCH);
    if (moved.length !== BATCH) throw new Error(`only ${moved.length} of ${BATCH} outcomes recorded`);
  }
  const sent = await store.db.selectFrom('mails').select('id').where('status', '=', MailStatus.ProviderSent).execute();
  if (sent.length !== ids.length - (ids.length % BATCH)) throw new Error('not every mail was recorded sent');
  return {
    on: { wallMs: median(samples.on.wall), cpuUsPerOutcome: median(samples.on.cpu) },
    off: { wallMs: median(samples.off.wall), cpuUsPerOutcome: median(samples.off.cpu) },
  };
}

const engines = values.engine === 'all' ? ['sqlite', ...((await postgresReachable()) ? ['postgres'] : [])] : [values.engine!];
const setup = describeSetup({ engine: engines.join('+'), mails: MAILS, batch: BATCH });
console.log('Application events: the cost of a group commit of 50 delivery outcomes, events on vs off, alternating');
console.log(setupLine(setup));
warnIfBusy(setup);
const rows: Array<Array<string | number>> = [];
const figures: Record<string, unknown> = {};
for (const engine of engines) {
  const dataDir = makeTempDir('outbox-bench-events-');
  const scratch = engine === 'postgres' ? await createScratchDatabase('events') : undefined;
  const store = await openStore({ dataDir, ...(scratch ? { databaseUrl: scratch.url } : {}) });
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
    await store.close();
    await scratch?.drop();
    removeDir(dataDir);
  }
}
printTable(['engine', 'commit ms (off)', 'commit ms (on)', 'CPU µs/outcome (off)', 'CPU µs/outcome (on)', 'events cost'], rows);
console.log(`result: ${writeResult('events', setup, figures)}`);
