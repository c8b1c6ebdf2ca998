import { defineConfig } from 'vitest/config';

// Scale-out tests need several processes on one shared database, which only PostgreSQL is; they belong to
// the suite's PostgreSQL half (OUTBOX_TEST_ENGINE=postgres, run by `npm test` and required in CI).
const onPostgres = process.env.OUTBOX_TEST_ENGINE === 'postgres';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: onPostgres ? [] : ['test/multi-instance/**'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
