/**
 * A store of a run's own, removed afterwards: a fresh temporary folder (the DATA_DIR every engine is given, SQLite's
 * file in it) and, on PostgreSQL, a scratch database (bench/support/postgres.ts). For the benchmarks that open the
 * store themselves; bench/support/outbox.ts makes the same for the server it starts.
 */
import { openStore, type Store, type StoreOptions } from '../../server/src/store/connection.js';
import { makeTempDir, removeDir } from './common.js';
import type { Engine } from './outbox.js';
import { createScratchDatabase } from './postgres.js';

export interface ScratchPlace {
  dataDir: string;
  /** The scratch database on PostgreSQL; undefined on SQLite. */
  databaseUrl: string | undefined;
  /** Drops the database and removes the folder: whatever used them must be closed first. */
  remove(): Promise<void>;
}

/** `label` names the folder and the database (outbox-bench-<label>-…, outbox_bench_<label>_…). */
export async function createScratchPlace(engine: Engine, label: string): Promise<ScratchPlace> {
  const dataDir = makeTempDir(`outbox-bench-${label}-`);
  const database = engine === 'postgres' ? await createScratchDatabase(label) : undefined;
  return {
    dataDir,
    databaseUrl: database?.url,
    async remove() {
      await database?.drop();
      removeDir(dataDir);
    },
  };
}

export interface ScratchStore {
  store: Store;
  /** Closes the store, then removes its place. */
  close(): Promise<void>;
}

/** A store (migrated unless `migrate: false`) on a fresh scratch place. */
export async function openScratchStore(
  engine: Engine,
  label: string,
  options: Omit<StoreOptions, 'dataDir' | 'databaseUrl'> = {},
): Promise<ScratchStore> {
  const place = await createScratchPlace(engine, label);
  try {
    const store = await openStore({ ...options, dataDir: place.dataDir, databaseUrl: place.databaseUrl });
    return {
      store,
      async close() {
        await store.close();
        await place.remove();
      },
    };
  } catch (error) {
    await place.remove();
    throw error;
  }
}
