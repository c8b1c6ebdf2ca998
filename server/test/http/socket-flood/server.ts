/**
 * The server side of socket-flood.test.ts, run as its own process (its descriptors and memory are measured from
 * outside, and its open-file limit is raised by the shell that starts it): the app as main.ts builds it, with
 * the default socket bounds unless the environment narrows them, on the engine under test, listening on a
 * loopback port that it prints as one JSON line. Ends on SIGTERM.
 */
import { buildApp } from '../../../src/app.js';
import { openStore } from '../../../src/store/connection.js';
import { seedMails } from '../../support/mails.js';

const env = process.env;
const store = await openStore({ dataDir: env.DATA_DIR!, databaseUrl: env.DATABASE_URL || undefined });
const { app, services } = await buildApp({
  store,
  // Many logins for the stream tokens; the cost of hashing is not what this test measures.
  passwordCost: 2 ** 10,
  http: {
    headersTimeoutMs: Number(env.FLOOD_HEADERS_TIMEOUT_MS),
    requestTimeoutMs: Number(env.FLOOD_REQUEST_TIMEOUT_MS),
  },
});
await services.auth.addOperator('ops', env.FLOOD_PASSWORD!);
await seedMails(
  store,
  Array.from({ length: 300 }, (_, i) => ({ subject: `Flood ${i}` })),
);
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => store.close())
    .finally(() => process.exit(0));
});
