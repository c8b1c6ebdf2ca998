import { defineConfig } from 'vitest/config';

// Scale-out tests need several processes on one shared database, which only PostgreSQL is; they belong to
// the suite's PostgreSQL half (OUTBOX_TEST_ENGINE=postgres, run by `npm test` and required in CI). A full
// disk is made with SQLite's max_page_count: it belongs to the SQLite half. Each half leaves out what is not
// its own rather than reporting it skipped.
const onPostgres = process.env.OUTBOX_TEST_ENGINE === 'postgres';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: onPostgres ? ['test/faults/disk-full.test.ts'] : ['test/multi-instance/**'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
