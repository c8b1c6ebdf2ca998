/**
 * Playwright's global setup: the stores every server of the run starts from, seeded once (support/server.ts).
 * What it returns, Playwright runs as the global teardown.
 */
import { seedStoreTemplates } from './server';

export default async function globalSetup(): Promise<() => void> {
  return seedStoreTemplates();
}
