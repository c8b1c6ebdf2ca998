/**
 * The operators' command line: `npm run outbox -- <command>`. It reads the same environment as the server
 * (DATA_DIR, DATABASE_URL, ...), migrates the store first, and may run beside a running server. Each command
 * group is a file of its own; this one reads the arguments, opens the store and runs the command.
 */
import path from 'node:path';
import { createAuthService } from '../auth/auth.service.js';
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig } from '../config.js';
import { AppError } from '../errors.js';
import { BackupError } from '../store/backup.js';
import { openStore, SQLITE_FILE_NAME, type Store } from '../store/connection.js';
import { ImportError } from '../store/transfer.js';
import { APIKEY_COMMANDS, APIKEY_USAGE } from './apikey-commands.js';
import { parseCliArgs, UsageError, type CliIo, type Command } from './command-context.js';
import { DEMO_COMMANDS, DEMO_USAGE } from './demo-command.js';
import { DKIM_USAGE, runDkimGenerate } from './dkim-command.js';
import { runRelayCommand, RELAY_USAGE, RelayUsageError } from './relay-command.js';
import { STATUS_COMMANDS, STATUS_USAGE } from './status-commands.js';
import { runBackup, STORE_COMMANDS, STORE_USAGE } from './store-commands.js';
import { runSuppressionCommand, SUPPRESSION_USAGE, SuppressionUsageError } from './suppression-command.js';
import { USER_COMMANDS, USER_USAGE } from './user-commands.js';
import { runWebhookCommand, WEBHOOK_USAGE, WebhookUsageError } from './webhook-commands.js';

const USAGE = `Usage: npm run outbox -- <command>

${USER_USAGE}
${APIKEY_USAGE}
${STORE_USAGE}
${STATUS_USAGE}
${DEMO_USAGE}
${WEBHOOK_USAGE}
${SUPPRESSION_USAGE}
${RELAY_USAGE}
${DKIM_USAGE}

Environment: DATA_DIR (./data) or DATABASE_URL, as for the server.`;

/** The commands run on the opened store, by their words; `webhook`, `suppression` and `relay` take their own. */
const COMMANDS: Record<string, Command> = {
  ...USER_COMMANDS,
  ...APIKEY_COMMANDS,
  ...STORE_COMMANDS,
  ...STATUS_COMMANDS,
  ...DEMO_COMMANDS,
};

export async function runCli(argv: string[], out: (line: string) => void = console.log, io: CliIo = {}): Promise<void> {
  const stderr = io.stderr ?? ((text: string) => process.stderr.write(text));
  const { values, positionals } = parseCliArgs(argv);
  const [group, action, name, argument] = positionals;
  if (values.help || !group) {
    out(USAGE);
    return;
  }
  const config = loadConfig(io.env);
  if (group === 'dkim' && action === 'generate') {
    runDkimGenerate(config, values, out);
    return;
  }
  if (group === 'backup') {
    await runBackup(config.databaseUrl, path.join(config.dataDir, SQLITE_FILE_NAME), values.out, out);
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
    const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
    if (!run) throw new UsageError(`Unknown command "${command}".\n\n${USAGE}`);
    await run({ store, config, auth, values, positionals, name, argument, needName, out, stderr, io });
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
