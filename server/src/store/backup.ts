/**
 * Online backup of the embedded store (SQLite's backup API through better-sqlite3), taken while the server
 * runs and writes. It copies the database as of one moment: every mail committed before the backup began is
 * in it; mails committed during the copy may or may not be.
 *
 * Restore: stop the server, put the backup file in DATA_DIR as `outbox.sqlite`, delete any
 * `outbox.sqlite-wal` and `outbox.sqlite-shm` beside it (they belong to the replaced file), start the server.
 */
import fs from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { createPrivateFile } from './private-files.js';

export interface BackupResult {
  file: string;
  bytes: number;
  pages: number;
  mails: number;
  milliseconds: number;
}

export class BackupError extends Error {}

/**
 * Copies the SQLite file `source` to `target` through its own connection, so it never waits for the
 * server's. The copy is written under a temporary name beside `target`, checked (`quick_check`), and only
 * then renamed, so `target` is never a half-written file, even if the backup is interrupted.
 */
export async function backupSqliteStore(source: string, target: string): Promise<BackupResult> {
  const started = performance.now();
  const targetPath = path.resolve(target);
  if (!fs.existsSync(source)) throw new BackupError(`There is no store at ${source} to back up (check DATA_DIR).`);
  if (!fs.existsSync(path.dirname(targetPath))) throw new BackupError(`The folder of --out does not exist: ${path.dirname(targetPath)}`);
  if (path.resolve(source) === targetPath) throw new BackupError('--out must not be the store file itself.');
  const partial = `${targetPath}.partial-${process.pid}`;
  fs.rmSync(partial, { force: true });
  // The copy is the whole store: created empty, readable by its owner only, before SQLite writes into it.
  createPrivateFile(partial);
  const database = new SqliteDatabase(source, { fileMustExist: true });
  try {
    // The server holds the write lock only for a commit; wait for it instead of failing.
    database.pragma('busy_timeout = 10000');
    // SQLite restarts a backup whose source another connection changed between two steps. Under constant
    // intake, small steps would restart forever; after the first step, everything left goes in one step,
    // which reads one consistent snapshot of the WAL and does not block the server's writers.
    const metadata = await database.backup(partial, { progress: () => 0x7fffffff });
    const copy = new SqliteDatabase(partial, { fileMustExist: true });
    let mails: number;
    try {
      const check = copy.pragma('quick_check', { simple: true });
      if (check !== 'ok') throw new BackupError(`The backup failed its integrity check (${String(check)}); ${target} was not written.`);
      mails = (copy.prepare('select count(*) as n from mails').get() as { n: number }).n;
    } finally {
      copy.close();
    }
    fs.renameSync(partial, targetPath);
    return {
      file: targetPath,
      bytes: fs.statSync(targetPath).size,
      pages: metadata.totalPages,
      mails,
      milliseconds: performance.now() - started,
    };
  } catch (error) {
    fs.rmSync(partial, { force: true });
    throw error;
  } finally {
    database.close();
  }
}
