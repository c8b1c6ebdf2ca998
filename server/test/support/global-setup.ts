/**
 * vitest globalSetup: builds the migrated template of the engine under test (template.ts) once, before any
 * test file starts, so that the first files do not all wait for it at once.
 */
import { ensurePostgresTemplate, ensureSqliteTemplate, postgresAdminUrl } from './template.js';

export default async function setup(): Promise<void> {
  if (process.env.OUTBOX_TEST_ENGINE === 'postgres') await ensurePostgresTemplate(postgresAdminUrl);
  // SQLite stores are opened on both halves (the CLI's export source, the backup test), and it costs ~50 ms.
  await ensureSqliteTemplate();
}
