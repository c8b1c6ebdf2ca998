import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = path.dirname(fileURLToPath(import.meta.url));

// Scale-out tests need several processes on one shared database, which only PostgreSQL is; they belong to
// the suite's PostgreSQL half (OUTBOX_TEST_ENGINE=postgres, run by `npm test` and required in CI). A full
// disk is made with SQLite's max_page_count, and two processes sharing one store file are SQLite's own case:
// they belong to the SQLite half. Each half leaves out what is not
// its own rather than reporting it skipped.
const onPostgres = process.env.OUTBOX_TEST_ENGINE === 'postgres';

// Files that never open a store: pure logic, or a component (the SMTP listener, the relay transport) against
// real sockets but no database. The engine changes nothing for them, so they run once, in the SQLite half.
// A file not listed runs on both engines, so forgetting to list one costs time, never coverage. The check
// below fails the run when a listed file is gone or starts using a store helper.
const storeFree = [
  'test/delivery/capture-relay.test.ts',
  'test/delivery/outcome-policy.test.ts',
  'test/delivery/relay-transport-smtp.test.ts',
  'test/delivery/relay-transport.test.ts',
  'test/delivery/retry-policy.test.ts',
  'test/intake/smtp-listener-manners.test.ts',
  'test/intake/smtp-listener.test.ts',
  'test/store/group-commit.test.ts',
  'test/submission/message-builder.test.ts',
  'test/submission/mime-composer.test.ts',
  'test/submission/summary-headers.test.ts',
  'test/remote-images/image-references.test.ts',
  'test/list/list-plan.test.ts',
  'test/alerts/alert-state.test.ts',
  'test/bounces/bounce-settings.test.ts',
  'test/bounces/report-reading.test.ts',
  'test/cli/instances-table.test.ts',
  'test/config/heartbeat-settings.test.ts',
  'test/config/worker-settings.test.ts',
  'test/config/webhook-settings.test.ts',
  'test/net/address-guard.test.ts',
  'test/net/client-key.test.ts',
  'test/store/single-writer.test.ts',
  'test/store/punctuation-keys.test.ts',
  'test/webhooks/webhook-policy.test.ts',
  'test/relays/relay-router.test.ts',
  'test/relays/relay-throttling.test.ts',
];
// Files that open a store only as scenery: what they test sits above it and is the same on both engines. They
// run once, in the SQLite half. The socket flood (2,000 clients against a server child) tests the HTTP
// server's socket bounds; its one store call is the operator's list, which every list test covers on both. The
// security headers are set before any route runs.
const engineNeutral = [
  'test/http/socket-flood.test.ts',
  'test/http/security-headers.test.ts',
  // The SMTP listeners' per-client limits act at connect and on commands, before any store call.
  'test/bounces/listener-client-limits.test.ts',
];

const storeHelpers = /support\/(context|outbox-process|postgres-pool|template)\.js|store\/connection\.js|\bbuildApp\b|\bstart\(loadConfig/;
for (const file of storeFree) {
  const source = fs.readFileSync(path.join(here, file), 'utf8'); // throws when the file was moved: update the list
  if (storeHelpers.test(source))
    throw new Error(
      `${file} is listed as store-free in vitest.config.ts but uses a store (${storeHelpers.exec(source)![0]}); remove it from the list`,
    );
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: onPostgres
      ? [
          'test/faults/disk-full.test.ts',
          'test/bounces/bounce-disk-reserve.test.ts',
          'test/store/sqlite-two-processes.test.ts',
          ...storeFree,
          ...engineNeutral,
        ]
      : // The move between engines needs both: it runs where PostgreSQL is required; PostgreSQL's row-version
        // counters are its own.
        ['test/multi-instance/**', 'test/store/transfer-roundtrip.test.ts', 'test/delivery/record-writes.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: onPostgres ? ['test/support/setup-postgres.ts'] : [],
    pool: 'forks',
    // A worker process runs its files one after another with one module cache: importing the server's
    // modules anew for each file cost more CPU than any test file (SQLite half: 216 → 150 CPU seconds, every
    // test passing on both engines). Files share nothing else: each opens its own store, app and ports, and
    // restores what it patches (smtp-pipelining.test.ts restores its spies).
    isolate: false,
    // A deadline only bounds a test that hangs; one that passes ends when it passes. In a full run on two cores
    // (load 20 with the browser suite beside it) tests that take 8 s alone took 20–25 s.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
