/**
 * `npm run outbox -- export|backup|import|purge`: the store as a whole from the command line. `backup` runs before
 * the store is opened (runBackup); the others on the opened store.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import readline from 'node:readline';
import { createBounceService } from '../bounces/bounce.service.js';
import { systemClock } from '../clock.js';
import { createMailService } from '../mail/mail.service.js';
import { mailImportWriter } from '../mail/write/import.js';
import { backupSqliteStore } from '../store/backup.js';
import { SQLITE_FILE_NAME } from '../store/connection.js';
import { PRIVATE_FILE_MODE } from '../store/private-files.js';
import { exportStore, importStore, type TransferCounts } from '../store/transfer.js';
import { UsageError, type Command } from './command-context.js';

export const STORE_USAGE = `  export [--out FILE]                   write the whole store (not sessions) as JSON lines, to FILE or stdout
  backup --out FILE                     copy the embedded SQLite store to FILE while the server runs
                                        (online backup); on PostgreSQL, use pg_dump instead
  import --in FILE                      read an export into this (new, empty) store, e.g. SQLite → PostgreSQL
  purge --older-than DAYS               delete finished and failed mails unchanged for DAYS days`;

/**
 * Runs before the store is opened: opening would create and migrate an empty store when DATA_DIR is wrong,
 * and the backup would then be of that empty store.
 */
export async function runBackup(databaseUrl: string | undefined, file: string, target: string | undefined, out: (line: string) => void) {
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

/** `n table, n table` of an export's or import's counts. */
function describeCounts(counts: TransferCounts): string {
  return Object.entries(counts)
    .map(([table, n]) => `${n.toLocaleString('en')} ${table}`)
    .join(', ');
}

export const STORE_COMMANDS: Record<string, Command> = {
  async export({ store, values, stderr }) {
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
    stderr(`Exported ${describeCounts(counts)}${values.out ? ` to ${values.out}` : ''}.\n`);
  },
  async import({ store, values, out }) {
    if (!values.in) throw new UsageError('import needs --in FILE, a file written by export.');
    // The iterator is taken at once: lines that readline reads before anyone iterates would be lost.
    const iterator = readline.createInterface({ input: fs.createReadStream(values.in), crlfDelay: Infinity })[Symbol.asyncIterator]();
    const counts = await importStore(store, { [Symbol.asyncIterator]: () => iterator }, mailImportWriter);
    out(`Imported ${describeCounts(counts)} into ${store.engine === 'sqlite' ? store.file : 'PostgreSQL'}.`);
  },
  async purge({ store, values, out }) {
    const days = Number(values['older-than']);
    if (values['older-than'] === undefined || !Number.isInteger(days) || days < 0)
      throw new UsageError('purge needs --older-than DAYS, a whole number of days (0 or more).');
    const purged = await createMailService({ store, clock: systemClock }).purgeFinishedMails(days, 'cli');
    // Reports go with their mail (a foreign key) and, matched or not, once as old (docs/bounces.md#limits).
    const reports = await createBounceService({ store, clock: systemClock }).purgeReports(days);
    out(
      `Purged ${purged.toLocaleString('en')} finished or failed mails unchanged for more than ${days} days, and ${reports.toLocaleString('en')} bounce reports received before then.`,
    );
  },
};
