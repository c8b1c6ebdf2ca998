/**
 * Files and folders that hold mail, operators or key hashes (DATA_DIR, the SQLite file, `export` and
 * `backup --out`) are created readable by the service's user only. Modes are set at
 * creation; an existing folder or file keeps the modes its operator chose.
 */
import fs from 'node:fs';

/** rwx------ for folders, rw------- for files Outbox creates in DATA_DIR and for `export`/`backup --out`. */
export const PRIVATE_DIRECTORY_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates an empty file readable by its owner only, unless it exists already. */
export function createPrivateFile(file: string): void {
  try {
    fs.closeSync(fs.openSync(file, 'wx', PRIVATE_FILE_MODE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}
