/**
 * `npm run outbox -- demo`: made-up mail for trying the console, written to the store at once or submitted through
 * the real pipeline (`--send`) for a running server's worker to deliver.
 */
import { systemClock } from '../clock.js';
import { demoSubmissionBatches, insertDemoMails } from '../demo/demo-data.js';
import { createMailService } from '../mail/mail.service.js';
import { createSubmissionService } from '../submission/submission.service.js';
import { UsageError, type Command } from './command-context.js';

export const DEMO_USAGE = `  demo --count N [--seed S]             add N realistic demo mails over all six statuses
  demo --count N --send                 submit N demo mails through the real pipeline: a running
                                        server's worker delivers them to its relay (some to reject.test
                                        and defer.test, so failures and retries show up too)`;

export const DEMO_COMMANDS: Record<string, Command> = {
  async demo({ store, config, auth, values, out, stderr }) {
    const count = Number(values.count ?? '1000');
    if (!Number.isInteger(count) || count < 1) throw new UsageError('--count must be a whole number of at least 1.');
    const seed = values.seed === undefined ? Date.now() : Number(values.seed);
    const started = performance.now();
    if (values.send) {
      const principal = await auth.ensureApiKeyPrincipal('demo');
      const submissions = createSubmissionService({
        store,
        clock: systemClock,
        mails: createMailService({ store, clock: systemClock }),
      });
      for (const batch of demoSubmissionBatches(count, seed)) await submissions.submitJson(principal, batch, true);
      const seconds = (performance.now() - started) / 1000;
      out(
        `Submitted ${count.toLocaleString('en')} demo mails in ${seconds.toFixed(1)} s as API key "demo". A running server's worker delivers them within a second; watch them in the console.`,
      );
      return;
    }
    let lastReport = started;
    await insertDemoMails(store, {
      count,
      now: Date.now(),
      seed,
      // Inside the retention period, or the server's next purge would delete the older demo mails.
      spanMs: Math.max(1, Math.min(28, config.retentionDays - 1)) * 86_400_000,
      onProgress: (inserted) => {
        if (performance.now() - lastReport > 2000) {
          lastReport = performance.now();
          stderr(`  ${inserted.toLocaleString('en')} of ${count.toLocaleString('en')} mails\n`);
        }
      },
    });
    // Running servers on the same PostgreSQL reload their consoles' lists (live updates); on SQLite no
    // other process hears this, and the console's next focus or page load shows them.
    store.changes.publish({ type: 'resync', ids: [] });
    const seconds = (performance.now() - started) / 1000;
    out(
      `Added ${count.toLocaleString('en')} demo mails in ${seconds.toFixed(1)} s (${Math.round(count / seconds).toLocaleString('en')} mails/s) to ${store.engine === 'sqlite' ? store.file : 'PostgreSQL'}.`,
    );
  },
};
