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

// The PostgreSQL half is opt-in: a test file runs on PostgreSQL only when its subject is what the
// engine can change: the store's SQL (claims, lists, search, counters, upserts, JSON, keysets), the single
// writer and the mail writes, bounces, the webhooks' and events' repositories, multi-instance behaviour and the
// migrations. A file whose subject sits above the store (an HTTP route's shape, an SMTP or socket manner, the
// configuration, the command line as a process, fuzzing, pure logic) runs once, in the SQLite half: the SQL it
// passes through on its way is proven on both engines by the opted-in file that is that SQL's home.
// The check below fails the run when a file that opens a store or imports its SQL layer is named in neither
// list, so a new file is decided on, never left out by accident. A path ending in `/` names a whole folder.
const onBothEngines = [
  // The store itself: migrations, the single writer, row inserts, export and import, retention.
  'test/store/queue-migration.test.ts',
  'test/store/row-insert.test.ts',
  'test/store/transfer-tables.test.ts',
  'test/store/transfer.test.ts',
  'test/bounces/report-migration.test.ts',
  // store/schema.ts against the migrated store: each engine's own columns and constraints.
  'test/store/schema-matches-database.test.ts',
  'test/mail/write.test.ts',
  'test/mail/content-retention.test.ts',
  'test/submission/idempotency.repository.test.ts',
  // Lists, search, keysets, counters and the reads built on them.
  'test/http/list-search.test.ts',
  'test/http/list-application.test.ts',
  'test/list/last-update-range.test.ts',
  'test/list/search-sample.test.ts',
  'test/http/mail.test.ts',
  'test/http/bulk.test.ts',
  'test/http/audit.test.ts',
  'test/http/application-reads.test.ts',
  'test/http/applications.test.ts',
  'test/http/queue-health.test.ts',
  'test/stats/statistics.test.ts',
  // What PostgreSQL answered with a 500 once (NUL bytes, out-of-range numbers): the reason the file exists.
  'test/http/hostile-input.test.ts',
  // Mail writes and claims: submission (idempotency upserts), the worker's claims and leases, races.
  'test/http/submission.test.ts',
  'test/intake/smtp-pipelining.test.ts',
  'test/delivery/delivery-writes.test.ts',
  'test/delivery/lanes.test.ts',
  'test/delivery/lease-renewal.test.ts',
  'test/delivery/recipient-outcomes.test.ts',
  'test/delivery/scheduled-send.test.ts',
  'test/delivery/worker-store-outage.test.ts',
  'test/delivery/worker.test.ts',
  'test/http/bulk-race.test.ts',
  // Bounces and suppressions: report upserts and caps, matching, the suppression list and its import.
  'test/bounces/bounce-flood.test.ts',
  'test/bounces/bounce-listener.test.ts',
  'test/bounces/suppressed-at-send.test.ts',
  'test/suppression/api.test.ts',
  'test/suppression/submission.test.ts',
  // Events, the live hub's reads, webhooks' repository and their claims across a crash, alerts' queries.
  'test/events/application-events.test.ts',
  'test/http/events.test.ts',
  'test/webhooks/delivery.test.ts',
  'test/webhooks/crash.test.ts',
  'test/alerts/alerts.test.ts',
  // Instances: heartbeat upserts, the stale threshold, the live-worker count.
  'test/instances/instances.test.ts',
  // The backup command copies the SQLite file; on PostgreSQL its test is the refusal (pointing to pg_dump).
  'test/faults/backup.test.ts',
  // Relays and routes: their repository, migration and the router's reads, health's rows and their fold.
  'test/relays/relay-cli.test.ts',
  'test/relays/relay-health.test.ts',
  'test/relays/relay-routing.test.ts',
  'test/relays/relays-api.test.ts',
  'test/relays/relays-migration.test.ts',
];
// PostgreSQL's own: several processes on one database, the move between engines, the row-version counters.
const postgresOnly = ['test/multi-instance/', 'test/store/transfer-roundtrip.test.ts', 'test/delivery/record-writes.test.ts'];
// SQLite's own: a full disk made with max_page_count, two processes sharing one store file.
const sqliteOnly = ['test/faults/disk-full.test.ts', 'test/bounces/bounce-disk-reserve.test.ts', 'test/store/sqlite-two-processes.test.ts'];
// Files that open a store, or import a helper that does, whose subject is the same on both engines. They run
// once, in the SQLite half. Each line says what the file proves and where the SQL it touches is proven on both.
const engineNeutral = [
  // Routes' shapes, auth rules and headers (sessions and operators are read by every file above that logs in).
  'test/http/api-docs.test.ts',
  'test/http/auth.test.ts',
  'test/http/metrics-token.test.ts',
  'test/http/operator-routes-auth.test.ts',
  'test/http/security-headers.test.ts',
  'test/http/remote-image.test.ts',
  'test/webhooks/api.test.ts',
  // Mail bodies and attachments parsed from the stored bytes (stored as submission.test.ts stores them).
  'test/http/mail-attachments.test.ts',
  'test/http/mail-smtp-bodies.test.ts',
  // The login limits are kept in memory per instance (auth/login-throttle.ts).
  'test/http/login-hardening.test.ts',
  'test/http/login-limits.test.ts',
  // Sockets: bounds, timeouts and a flood of slow clients against the HTTP server and the SMTP listeners.
  'test/http/socket-bounds.test.ts',
  'test/http/socket-flood.test.ts',
  'test/bounces/listener-client-limits.test.ts',
  'test/pipeline/smtp-manners.test.ts',
  // Fuzzing of the HTTP routes, the SMTP listener and the bounce listener: what their answers look like. The
  // engine's own refusals (NUL, out-of-range numbers) are hostile-input.test.ts's, on both.
  'test/fuzz/http.fuzz.test.ts',
  'test/fuzz/smtp.fuzz.test.ts',
  'test/fuzz/bounce.fuzz.test.ts',
  // The configuration check and its start-up warnings.
  'test/config/listener-settings.test.ts',
  'test/config/relay-settings.test.ts',
  // The command line as a user runs it: arguments, standard input, output, exit status. Its store work is the
  // services' (purge: bounce-flood and application-events; import: transfer.test.ts and transfer-roundtrip).
  'test/cli/cli.test.ts',
  'test/suppression/cli.test.ts',
  'test/webhooks/cli.test.ts',
  // Processes as `npm start` wires them: a first start's files and output; byte-for-byte delivery of HTTP and
  // SMTP submissions and a worker killed mid-delivery (on PostgreSQL: multi-instance.test.ts's kill, and
  // webhooks/crash.test.ts on both); heartbeats of real processes (their SQL: instances.test.ts).
  'test/pipeline/first-start.test.ts',
  'test/pipeline/pipeline.test.ts',
  'test/instances/process-heartbeat.test.ts',
  // DKIM signing and an alert's webhook: the signature, not the store.
  'test/delivery/dkim.test.ts',
  'test/alerts/alert-webhooks.test.ts',
  // Failover between two smtp-sink processes: the router's moves and what the peers received. The health rows, the
  // alert and the routes it reads are relay-health's and relay-routing's, on both.
  'test/relays/relay-failover-peers.test.ts',
  // A private Postfix's DSN read by the bounce listener; matching and the suppression are bounce-listener's.
  'test/bounces/postfix-bounce.test.ts',
  // Only the report builders (dsn, arf) of bounce-support.ts, which also starts stores for other files.
  'test/bounces/report-reading.test.ts',
  // Only newEventId of the events' repository, a pure function: the message builder stamps it.
  'test/submission/message-builder.test.ts',
];

/**
 * Whether a test file opens a store or imports the store's SQL layer, itself or through a helper of its own
 * folder (bounce-support.ts, webhooks/support.ts): a value import of a store helper of test/support/, the
 * store's connection, transfer or migrations, a repository, the single writer, the app or the service's start.
 * Type-only imports do not count.
 */
const storeImport =
  /(?:^import (?!type )[^;]*?from |\bimport\()'[^']*(?:support\/(?:context|outbox-process|worker-harness|postgres-pool|template|cli)|src\/store\/(?:connection|transfer|migrate|row-insert)|\.repository|src\/mail\/write\/[\w-]+|src\/app|src\/main)\.js';/ms;
const localImport = /^import (?!type )[^;]*?from '(\.{1,2}\/[^']+)\.js';/gm;
const supportDir = path.join(here, 'test/support');

function opensStore(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  const source = fs.readFileSync(file, 'utf8');
  if (new RegExp(storeImport.source, 'gms').test(source)) return true;
  for (const [, target] of source.matchAll(localImport)) {
    const imported = path.resolve(path.dirname(file), `${target}.ts`);
    // A folder's own helpers are followed; test/support/'s are what the pattern above names.
    if (
      imported.startsWith(path.join(here, 'test')) &&
      !imported.startsWith(supportDir) &&
      fs.existsSync(imported) &&
      opensStore(imported, seen)
    )
      return true;
  }
  return false;
}

const listed = [...onBothEngines, ...postgresOnly, ...sqliteOnly, ...engineNeutral];
const covers = (entry: string, file: string) => (entry.endsWith('/') ? file.startsWith(entry) : file === entry);
const testFiles = fs
  .readdirSync(path.join(here, 'test'), { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.test.ts'))
  .map((name) => `test/${name.split(path.sep).join('/')}`);
const listProblems = listed
  .filter((entry) => !fs.existsSync(path.join(here, entry)))
  .map((entry) => `${entry} is named but does not exist: update the list`);
for (const file of testFiles) {
  const named = listed.filter((entry) => covers(entry, file));
  const usesStore = opensStore(path.join(here, file));
  if (usesStore && named.length === 0)
    listProblems.push(
      `${file} opens a store or imports its SQL layer: name it in onBothEngines if its subject is what differs between ` +
        'the engines (store SQL, lists, mail writes and claims, bounces, webhooks, events, instances, migrations), else in ' +
        'engineNeutral with a word on why',
    );
  if (!usesStore && named.includes(file)) listProblems.push(`${file} is named but opens no store: it runs once anyway; remove it`);
  if (named.length > 1) listProblems.push(`${file} is named in more than one list: ${named.join(', ')}`);
}
if (listProblems.length > 0) throw new Error(`server/vitest.config.ts, the engines' lists:\n${listProblems.join('\n')}`);

const asGlob = (entry: string) => (entry.endsWith('/') ? `${entry}**/*.test.ts` : entry);
// OUTBOX_TEST_EVERY_FILE=1 runs every file the engine can run, opted in or not: a neutral file on PostgreSQL on
// demand (a longer fuzz run there, a doubt about a file's list).
const everyFile = process.env.OUTBOX_TEST_EVERY_FILE === '1';
const postgresFiles = everyFile ? ['test/**/*.test.ts'] : [...onBothEngines, ...postgresOnly].map(asGlob);

export default defineConfig({
  test: {
    include: onPostgres ? postgresFiles : ['test/**/*.test.ts'],
    exclude: (onPostgres ? sqliteOnly : postgresOnly).map(asGlob),
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
