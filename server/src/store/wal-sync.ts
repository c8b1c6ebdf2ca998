/**
 * Durable SQLite commits without blocking the event loop (issue 25, docs/decisions.md "SQLite commits:
 * synchronous=NORMAL and a grouped fdatasync of the WAL").
 *
 * With `synchronous = FULL` SQLite fsyncs the WAL inside COMMIT, on the event loop: 22 % of the SMTP
 * listener's main thread. With `synchronous = NORMAL` (WAL mode) COMMIT writes the transaction's frames to
 * the WAL file and returns without a sync; this module then runs `fdatasync` on the WAL file in libuv's
 * thread pool, and nothing the store hands back after a commit (its transaction's result, an autocommit
 * write's, a read that could see it) resolves before a sync that started after that commit has finished.
 * One sync covers every commit that finished before it started, so the commits of a busy moment share it.
 *
 * Linux syncs a file's dirty pages whichever descriptor names it, so our own descriptor on the WAL file
 * (opened after SQLite opened its own, on the same inode) covers SQLite's writes.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Makes everything written to the file behind `fd` durable (the default: `fs.fdatasync` in the thread pool). */
export type WalSyncer = (fd: number) => Promise<void>;

export const fdatasyncFile: WalSyncer = (fd) =>
  new Promise((resolve, reject) => {
    fs.fdatasync(fd, (error) => (error ? reject(error) : resolve()));
  });

export interface WalDurability {
  /**
   * A commit (COMMIT, or a write outside a transaction) is about to run; the next sync to start must cover it.
   * Called synchronously just before the statement runs, so no sync can start in between.
   */
  written(): void;
  /** How many commits were marked so far: a connection's user compares it before and after. */
  readonly marked: number;
  /** Resolves once every commit marked so far is on disk; rejects when the sync covering one of them failed. */
  durable(): Promise<void>;
  /**
   * Whether the connection must go back to `synchronous = FULL` (a sync failed): the caller switches it at
   * the next statement outside a transaction (SQLite refuses the change inside one) and calls `switchedToFull`.
   */
  readonly wantsFull: boolean;
  switchedToFull(): void;
  close(): void;
}

/**
 * Sync bookkeeping for one connection. `marked` counts commits; `synced` is the highest count a finished sync
 * covered. One sync runs at a time; a commit that finished while one ran waits for the next, which takes every
 * commit marked until it starts.
 */
export function createWalDurability(fd: number, sync: WalSyncer): WalDurability {
  let marked = 0;
  let synced = 0;
  /** The sync in flight: the commits it covers, and its error once it failed. */
  let running: { covers: number; done: Promise<unknown> } | null = null;
  let wantsFull = false;
  /** Once the connection is back on FULL, SQLite syncs in COMMIT itself: later commits wait for nothing. */
  let fullFrom = Infinity;
  let closed = false;

  function start(): NonNullable<typeof running> {
    const covers = marked;
    const run = {
      covers,
      done: sync(fd).then(
        () => {
          synced = Math.max(synced, covers);
          running = null;
          return undefined;
        },
        (error: unknown) => {
          // After a failed fsync the kernel may have dropped the dirty pages, and a later fsync may succeed
          // without writing them ("fsyncgate"): the commits this sync covered are reported failed to their
          // waiters, and the connection goes back to FULL, where SQLite reports a failed sync as a failed commit.
          synced = Math.max(synced, covers);
          wantsFull = true;
          running = null;
          return error ?? new Error('fdatasync failed');
        },
      ),
    };
    running = run;
    return run;
  }

  return {
    written() {
      marked += 1;
    },
    get marked() {
      return marked;
    },
    async durable() {
      const target = marked;
      if (target >= fullFrom) return;
      while (synced < target) {
        if (closed) throw new Error('The store was closed before its last commit was synced');
        const run = running ?? start();
        const error = await run.done;
        if (error !== undefined && run.covers >= target) throw error;
      }
    },
    get wantsFull() {
      return wantsFull;
    },
    switchedToFull() {
      wantsFull = false;
      fullFrom = marked + 1;
    },
    close() {
      closed = true;
      fs.closeSync(fd);
    },
  };
}

/** Syncs the folder, so that a file just created in it (the WAL) is still there after a power loss. */
export function syncDirectory(dir: string): void {
  const fd = fs.openSync(path.resolve(dir), 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
