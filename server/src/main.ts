/**
 * The process: configuration, store, HTTP (API + console), and graceful shutdown. The delivery worker and
 * the SMTP listener join here (they reuse the services, never http/).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { openStore } from './store/connection.js';

/** server/src/main.ts (tsx) and server/dist/main.js (built) are both two folders below the repo root. */
const defaultConsoleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/dist');

export async function start(config: Config) {
  const store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const { app, services } = await buildApp({
    store,
    sessionTtlSeconds: config.sessionTtlSeconds,
    consoleDir: process.env.OUTBOX_CONSOLE_DIR ?? defaultConsoleDir,
    logger: { level: config.logLevel },
  });
  const log = app.log;

  const { createdAdminPassword } = await services.auth.ensureOperators({ username: config.adminUser, password: config.adminPassword });
  if (createdAdminPassword) {
    // Printed once, on purpose: there was no operator at all and none was configured.
    log.warn(`No operator existed: created operator "admin" with password "${createdAdminPassword}". Change it with: npm run outbox -- user passwd admin`);
  }

  await app.listen({ port: config.port, host: config.host });
  log.info({ store: store.engine, dataDir: store.file ? config.dataDir : undefined }, `Outbox console and API on http://${config.host}:${app.server.address() && typeof app.server.address() === 'object' ? (app.server.address() as { port: number }).port : config.port}`);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      log.info('shutting down: no new requests, finishing what is in flight');
      await app.close();
      await store.close();
    })();
    return stopping;
  };
  return { app, store, services, stop };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const running = await start(config);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      running.stop().then(
        () => process.exit(0),
        (error: unknown) => {
          console.error(error);
          process.exit(1);
        },
      );
    });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
