/** What /healthz reports: whether the store answers, and which engine it is. */
import { probeStore, type Store } from '../store/connection.js';

export function createHealthService(store: Store) {
  return {
    engine: store.engine,
    async isStoreReachable(): Promise<boolean> {
      try {
        await probeStore(store.db);
        return true;
      } catch {
        return false;
      }
    },
  };
}

export type HealthService = ReturnType<typeof createHealthService>;
