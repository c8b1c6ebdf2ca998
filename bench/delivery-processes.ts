/**
 * Delivery rate with one and with two worker processes on PostgreSQL: N mails are
 * queued in a scratch database, then K worker-only instances (`node --import tsx server/src/main.ts` with
 * PORT=off SMTP_PORT=off WORKER=on, as docs/operations.md runs them) drain them to a sink process. The clock
 * runs from the moment the workers are ready until ProviderSent reaches N.
 *
 *   npx tsx bench/delivery-processes.ts [--count 10000] [--processes 1,2]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { MailStatus } from '@outbox/contract';
import { createAuthService } from '../server/src/auth/auth.service.js';
import { systemClock } from '../server/src/clock.js';
import { createMailService } from '../server/src/mail/mail.service.js';
import { getStatusCounts } from '../server/src/mail/mail.repository.js';
import { createSubmissionService } from '../server/src/submission/submission.service.js';
import { openStore } from '../server/src/store/connection.js';
import { benchDir, formatNumber, printSetup, printTable, rate, sleep, writeResult } from './support/common.js';
import { queueMails } from './support/mails.js';
import { parseBenchArgs, resolveEngines, wholeNumberOption, wholeNumbersOption } from './support/options.js';
import { createScratchPlace } from './support/scratch-store.js';
import { startSinkProcess } from './support/sink-process.js';

const { count, processes: processCounts } = parseBenchArgs({ count: wholeNumberOption(10_000), processes: wholeNumbersOption([1, 2]) });
// PostgreSQL only: without one the run ends here, saying so.
await resolveEngines('postgres', { withoutPostgres: 'skip' });

const setup = printSetup('Delivery rate on PostgreSQL with one and two worker processes', {
  engine: 'postgres',
  count,
  processes: processCounts.join(','),
  workerConcurrency: 50,
  sink: 'capture relay (store:false) in a child process',
});

const serverDir = path.resolve(benchDir, '../server');
const sink = await startSinkProcess();
const results: Array<{ processes: number; seconds: number; mailsPerSecond: number }> = [];
try {
  for (const processes of processCounts) {
    const place = await createScratchPlace('postgres', `procs${processes}`);
    const { dataDir, databaseUrl } = place;
    const store = await openStore({ dataDir, databaseUrl, maxConnections: 4 });
    const children: ChildProcess[] = [];
    try {
      const auth = createAuthService({ store, clock: systemClock, sessionTtlSeconds: 3600 });
      const principal = (await auth.findApiKeyPrincipal(await auth.createApiKey('bench')))!;
      const submissions = createSubmissionService({ store, clock: systemClock, mails: createMailService({ store, clock: systemClock }) });
      await queueMails(submissions, principal, count);
      // Workers start with the queue full; each logs once it runs, then the clock starts.
      const ready: Array<Promise<void>> = [];
      for (let i = 0; i < processes; i++) {
        const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
          cwd: serverDir,
          env: {
            ...process.env,
            DATABASE_URL: databaseUrl,
            DATA_DIR: dataDir,
            PORT: 'off',
            SMTP_PORT: 'off',
            WORKER: 'on',
            RELAY_URL: sink.url,
            LOG_LEVEL: 'info',
            OUTBOX_ADMIN_USER: 'bench',
            OUTBOX_ADMIN_PASSWORD: 'bench-password',
          },
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        children.push(child);
        ready.push(
          new Promise<void>((resolve) =>
            child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('Outbox running') && resolve()),
          ),
        );
      }
      await Promise.all(ready);
      const started = performance.now();
      for (;;) {
        if ((await getStatusCounts(store.db)).get(MailStatus.ProviderSent) === count) break;
        await sleep(20);
      }
      const ms = performance.now() - started;
      results.push({ processes, seconds: ms / 1000, mailsPerSecond: rate(count, ms) });
    } finally {
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) =>
              child.exitCode !== null ? resolve() : (child.once('exit', () => resolve()), child.kill('SIGTERM')),
            ),
        ),
      );
      await store.close();
      await place.remove();
    }
  }
} finally {
  await sink.stop();
}

printTable(
  ['worker processes', 'mails', 'seconds', 'mails/s'],
  results.map((r) => [r.processes, formatNumber(count), r.seconds.toFixed(2), formatNumber(r.mailsPerSecond)]),
);
console.log(`\nresult: ${writeResult('delivery-processes', setup, { count, results })}`);
