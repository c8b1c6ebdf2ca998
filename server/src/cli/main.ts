/**
 * The operators' command line: `npm run outbox -- <command>`. It reads the same environment as the server
 * (DATA_DIR, DATABASE_URL, ...), migrates the store first, and may run beside a running server.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { LANES, type Lane } from '@outbox/contract';
import { createAuthService } from '../auth/auth.service.js';
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig } from '../config.js';
import { AppError } from '../errors.js';
import { createInstanceService } from '../instances/instance.service.js';
import { demoSubmissionBatches, insertDemoMails } from '../demo/demo-data.js';
import { createBounceService } from '../bounces/bounce.service.js';
import { createMailService } from '../mail/mail.service.js';
import { createContentRetention } from '../mail/content-retention.js';
import { createSubmissionService } from '../submission/submission.service.js';
import { mailImportWriter } from '../mail/write/import.js';
import { BackupError, backupSqliteStore } from '../store/backup.js';
import { PRIVATE_FILE_MODE } from '../store/private-files.js';
import { openStore, SQLITE_FILE_NAME, type Store } from '../store/connection.js';
import { exportStore, ImportError, importStore } from '../store/transfer.js';
import { createAlertService } from '../alerts/alert.service.js';
import { formatAlerts } from './alerts-table.js';
import { formatInstances } from './instances-table.js';
import { generateDkimKey } from '../delivery/dkim.js';
import { promptPassword, readPasswordFromStdin } from './read-password.js';
import { runWebhookCommand, WEBHOOK_USAGE, WebhookUsageError } from './webhook-commands.js';
import { runSuppressionCommand, SUPPRESSION_USAGE, SuppressionUsageError } from './suppression-command.js';
import { runRelayCommand, RELAY_USAGE, RelayUsageError } from './relay-command.js';

const USAGE = `Usage: npm run outbox -- <command>

  user add NAME [--password-stdin]      create an operator (password from a prompt or standard input)
  user passwd NAME [--password-stdin]   set an operator's password (ends the operator's sessions)
  user remove NAME                      remove an operator
  apikey create NAME [--lane LANE]      create an API key (an application; LANE transactional, the default,
                                        or bulk); the key alone is the last line printed
  apikey revoke NAME                    revoke an API key
  apikey lane NAME LANE                 move an application to the transactional or the bulk lane
  apikey content-retention NAME DAYS|default
                                        keep the content (raw message, bodies, attachments) of NAME's
                                        final mails DAYS days (0: removed once final), or follow
                                        CONTENT_RETENTION_DAYS again with "default"
  export [--out FILE]                   write the whole store (not sessions) as JSON lines, to FILE or stdout
  backup --out FILE                     copy the embedded SQLite store to FILE while the server runs
                                        (online backup); on PostgreSQL, use pg_dump instead
  import --in FILE                      read an export into this (new, empty) store, e.g. SQLite → PostgreSQL
  purge --older-than DAYS               delete finished and failed mails unchanged for DAYS days
  instances [--json]                    the running processes from their heartbeats: roles, host, pid,
                                        version, age, last heartbeat, load; stale ones marked
  alerts [--json]                       every alert rule's state (ok, pending, firing, resolved, inactive),
                                        since when, and its value against its threshold
  demo --count N [--seed S]             add N realistic demo mails over all six statuses
  demo --count N --send                 submit N demo mails through the real pipeline: a running
                                        server's worker delivers them to its relay (some to reject.test
                                        and defer.test, so failures and retries show up too)
${WEBHOOK_USAGE}
${SUPPRESSION_USAGE}
${RELAY_USAGE}
  dkim generate --domain D --selector S [--out FILE]
                                        write an RSA-2048 DKIM key (FILE, default DATA_DIR/dkim-S.pem) and
                                        print its path and the DNS TXT record to publish

Environment: DATA_DIR (./data) or DATABASE_URL, as for the server.`;

class UsageError extends Error {}

function needLane(value: string | undefined): Lane {
  const lane = value?.trim().toLowerCase();
  if (!lane || !(LANES as readonly string[]).includes(lane)) throw new UsageError(`LANE must be ${LANES.join(' or ')}.`);
  return lane as Lane;
}

async function readPassword(usesStdin: boolean, io: CliIo): Promise<string> {
  if (io.stdin) return readPasswordFromStdin(io.stdin);
  if (usesStdin || !process.stdin.isTTY) return readPasswordFromStdin();
  const first = await promptPassword('Password: ');
  const second = await promptPassword('Repeat password: ');
  if (first !== second) throw new UsageError('The two passwords differ; nothing was changed.');
  return first;
}

/**
 * Runs before the store is opened: opening would create and migrate an empty store when DATA_DIR is wrong,
 * and the backup would then be of that empty store.
 */
async function backup(databaseUrl: string | undefined, file: string, target: string | undefined, out: (line: string) => void) {
  if (databaseUrl)
    throw new UsageError(
      'backup copies the embedded SQLite store only. This installation uses PostgreSQL (DATABASE_URL): back it up with pg_dump, e.g. pg_dump --format=custom --file=outbox.dump "$DATABASE_URL", and restore with pg_restore.',
    );
  if (!target) throw new UsageError('backup needs --out FILE, the file to write the copy to.');
  const result = await backupSqliteStore(file, target);
  out(
    `Backed up ${file} to ${result.file}: ${result.mails.toLocaleString('en')} mails, ${(result.bytes / 1_048_576).toFixed(1)} MiB, in ${(result.milliseconds / 1000).toFixed(1)} s. Restore: stop the server, copy the file to DATA_DIR/${SQLITE_FILE_NAME}, delete ${SQLITE_FILE_NAME}-wal and -shm there, start the server.`,
  );
}

/**
 * What the command reads and writes besides `out`, the process's own by default. Tests run the command in
 * their process with their own (test/support/cli.ts), instead of paying a Node start per command.
 */
export interface CliIo {
  env?: NodeJS.ProcessEnv;
  /** Standard input, for --password-stdin; never a prompt. */
  stdin?: AsyncIterable<Buffer | string>;
  stderr?: (text: string) => void;
}

export async function runCli(argv: string[], out: (line: string) => void = console.log, io: CliIo = {}): Promise<void> {
  const stderr = io.stderr ?? ((text: string) => process.stderr.write(text));
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'password-stdin': { type: 'boolean', default: false },
      count: { type: 'string' },
      seed: { type: 'string' },
      send: { type: 'boolean', default: false },
      'older-than': { type: 'string' },
      out: { type: 'string' },
      in: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
      json: { type: 'boolean', default: false },
      events: { type: 'string' },
      application: { type: 'string' },
      description: { type: 'string' },
      note: { type: 'string' },
      domain: { type: 'string' },
      selector: { type: 'string' },
      expires: { type: 'string' },
      lane: { type: 'string' },
      'max-per-second': { type: 'string' },
      'max-connections': { type: 'string' },
      tls: { type: 'string' },
    },
  });
  const [group, action, name, argument] = positionals;
  if (values.help || !group) {
    out(USAGE);
    return;
  }
  const config = loadConfig(io.env);
  if (group === 'dkim' && action === 'generate') {
    if (!values.domain || !values.selector) throw new UsageError('dkim generate needs --domain DOMAIN and --selector SELECTOR.');
    const key = generateDkimKey(values.domain.trim().toLowerCase(), values.selector.trim());
    const file = path.resolve(values.out ?? path.join(config.dataDir, `dkim-${values.selector.trim()}.pem`));
    if (fs.existsSync(file))
      throw new UsageError(`${file} exists; a published key is never overwritten. Choose another --selector or --out.`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // The private key: its owner only, and never overwritten (a published record would stop matching).
    fs.writeFileSync(file, key.privateKeyPem, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    out(`Private key written to ${file}. Set DKIM_DOMAIN=${values.domain} DKIM_SELECTOR=${values.selector} DKIM_PRIVATE_KEY_FILE=${file}`);
    out('Publish this DNS TXT record before turning signing on:');
    out(`${key.recordName}. IN TXT "${key.recordValue}"`);
    return;
  }
  if (group === 'backup') {
    await backup(config.databaseUrl, path.join(config.dataDir, SQLITE_FILE_NAME), values.out, out);
    return;
  }
  const store: Store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, maxConnections: 2 });
  try {
    const auth = createAuthService({
      store,
      clock: systemClock,
      sessionTtlSeconds: config.sessionTtlSeconds,
      passwordCost: config.passwordHashMemoryMiB * 1024,
    });
    const needName = () => {
      if (!name) throw new UsageError(`${group} ${action} needs a NAME.\n\n${USAGE}`);
      return name;
    };
    if (group === 'webhook') {
      await runWebhookCommand(store, action, name, values, config.webhookAllowPrivate, out);
      return;
    }
    if (group === 'suppression') {
      await runSuppressionCommand(
        store,
        action,
        name,
        { note: values.note, expires: values.expires, out: values.out, json: values.json },
        out,
      );
      return;
    }
    if (group === 'relay') {
      await runRelayCommand(store, action, name, argument, values, out);
      return;
    }
    const command = `${group} ${action ?? ''}`.trim();
    switch (command) {
      case 'user add':
        await auth.addOperator(needName(), await readPassword(values['password-stdin'], io));
        out(`Operator ${name} created.`);
        break;
      case 'user passwd':
        await auth.setOperatorPassword(needName(), await readPassword(values['password-stdin'], io));
        out(`Password of ${name} changed; its sessions were ended.`);
        break;
      case 'user remove':
        await auth.removeOperator(needName());
        out(`Operator ${name} removed.`);
        break;
      case 'apikey create': {
        const key = await auth.createApiKey(needName(), 'cli', { lane: needLane(values.lane ?? 'transactional') });
        out(`API key ${name} created. It is shown only now; keep it secret:`);
        out(key);
        break;
      }
      case 'apikey lane': {
        const lane = needLane(positionals[3]);
        const before = await auth.setApiKeyLane(needName(), lane);
        out(
          before === lane
            ? `API key ${name} is in the ${lane} lane already.`
            : `API key ${name} moved from the ${before} lane to the ${lane} lane.`,
        );
        break;
      }
      case 'apikey revoke':
        await auth.revokeApiKey(needName());
        out(`API key ${name} revoked.`);
        break;
      case 'apikey content-retention': {
        const keyName = needName();
        const days = argument === 'default' ? null : /^\d{1,6}$/.test(argument ?? '') ? Number(argument) : undefined;
        if (days === undefined)
          throw new UsageError(`apikey content-retention ${keyName} needs DAYS, a whole number of days (0 or more), or "default".`);
        const retention = createContentRetention({
          store,
          clock: systemClock,
          defaultDays: config.contentRetentionDays,
          retentionDays: config.retentionDays,
        });
        const set = await retention.setApplicationContentRetention({ name: keyName }, days, 'cli');
        out(
          set.contentRetentionDays === null
            ? `API key ${set.name} follows CONTENT_RETENTION_DAYS again: the content of its final mails is kept ${set.effectiveContentRetentionDays} days.`
            : `API key ${set.name}: the content of its final mails is kept ${set.effectiveContentRetentionDays} days${set.effectiveContentRetentionDays === 0 ? ' (removed within a minute of the outcome by a running server)' : ''}.`,
        );
        break;
      }
      case 'export': {
        // The export holds every mail and operator: readable by its owner only when it creates the file.
        const target = values.out ? fs.createWriteStream(values.out, { mode: PRIVATE_FILE_MODE }) : process.stdout;
        const write = async (line: string) => {
          // Respects backpressure, so a million mails do not pile up in memory ahead of a slow disk or pipe.
          if (!target.write(`${line}\n`)) await once(target, 'drain');
        };
        const counts = await exportStore(store, write);
        if (values.out)
          await new Promise<void>((resolve, reject) =>
            (target as fs.WriteStream).end((error?: Error | null) => (error ? reject(error) : resolve())),
          );
        // The summary goes to stderr, so that stdout is the export alone.
        stderr(
          `Exported ${Object.entries(counts)
            .map(([table, n]) => `${n.toLocaleString('en')} ${table}`)
            .join(', ')}${values.out ? ` to ${values.out}` : ''}.\n`,
        );
        break;
      }
      case 'import': {
        if (!values.in) throw new UsageError('import needs --in FILE, a file written by export.');
        // The iterator is taken at once: lines that readline reads before anyone iterates would be lost.
        const iterator = readline.createInterface({ input: fs.createReadStream(values.in), crlfDelay: Infinity })[Symbol.asyncIterator]();
        const counts = await importStore(store, { [Symbol.asyncIterator]: () => iterator }, mailImportWriter);
        out(
          `Imported ${Object.entries(counts)
            .map(([table, n]) => `${n.toLocaleString('en')} ${table}`)
            .join(', ')} into ${store.engine === 'sqlite' ? store.file : 'PostgreSQL'}.`,
        );
        break;
      }
      case 'instances': {
        const instances = await createInstanceService({ store, clock: systemClock }).listInstances();
        if (values.json) out(JSON.stringify(instances, null, 2));
        else for (const line of formatInstances(instances)) out(line);
        break;
      }
      case 'alerts': {
        const alerts = await createAlertService({ store, clock: systemClock, settings: config.alerts }).listAlerts();
        if (values.json) out(JSON.stringify(alerts, null, 2));
        else for (const line of formatAlerts(alerts)) out(line);
        break;
      }
      case 'purge': {
        const days = Number(values['older-than']);
        if (values['older-than'] === undefined || !Number.isInteger(days) || days < 0)
          throw new UsageError('purge needs --older-than DAYS, a whole number of days (0 or more).');
        const purged = await createMailService({ store, clock: systemClock }).purgeFinishedMails(days, 'cli');
        // Reports go with their mail (a foreign key) and, matched or not, once as old (docs/bounces.md#limits).
        const reports = await createBounceService({ store, clock: systemClock }).purgeReports(days);
        out(
          `Purged ${purged.toLocaleString('en')} finished or failed mails unchanged for more than ${days} days, and ${reports.toLocaleString('en')} bounce reports received before then.`,
        );
        break;
      }
      case 'demo': {
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
          break;
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
        break;
      }
      default:
        throw new UsageError(`Unknown command "${command}".\n\n${USAGE}`);
    }
  } finally {
    await store.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.match(/cli[\\/]main\.ts$|dist[\\/]cli\.js$/)) {
  runCli(process.argv.slice(2)).catch((error: unknown) => {
    if (
      error instanceof ConfigError ||
      error instanceof UsageError ||
      error instanceof WebhookUsageError ||
      error instanceof SuppressionUsageError ||
      error instanceof RelayUsageError ||
      error instanceof AppError ||
      error instanceof ImportError ||
      error instanceof BackupError
    ) {
      console.error(error.message);
    } else {
      console.error(error instanceof Error ? error.stack : error);
    }
    process.exit(1);
  });
}
