/**
 * The delivery worker as server/src/main.ts builds it, for the benchmarks that drain a queue (delivery.ts,
 * mixed.ts): the config's retry policy, concurrency and lease, the relay pool sized as main.ts sizes it, the
 * relay router in front of it (with no route in the store every mail still goes through it to the default relay,
 * paying for its health and throttling bookkeeping as in production), and a logger that keeps the first warnings
 * and errors, to explain a failed run.
 */
import { loadConfig, type Config } from '../../server/src/config.js';
import { systemClock } from '../../server/src/clock.js';
import { createRelayRouter } from '../../server/src/delivery/relay-router.js';
import { createRelayTransport } from '../../server/src/delivery/relay-transport.js';
import { retryPolicyFromSettings } from '../../server/src/delivery/retry-policy.js';
import { createDeliveryWorker } from '../../server/src/delivery/worker.js';
import { routingDirectoryFor } from '../../server/src/relays/routing-table.js';
import type { Store } from '../../server/src/store/connection.js';

/** The config a benchmark builds its worker from: the defaults, with `--concurrency` as WORKER_CONCURRENCY when given. */
export function benchWorkerConfig(concurrency: string | undefined): Config {
  return loadConfig({ ...(concurrency ? { WORKER_CONCURRENCY: concurrency } : {}) });
}

/** The relay pool's connections for a worker of `concurrency` sends, as main.ts sizes it. */
export function relayPoolSize(concurrency: number): number {
  return Math.max(1, Math.min(10, Math.ceil(concurrency / 4)));
}

/** A worker logger that keeps the first five warnings and errors (info is dropped). */
export function collectingLogger() {
  const lines: string[] = [];
  const keep = (level: string) => (object: object, message?: string) => {
    if (lines.length < 5)
      lines.push(
        `${level}: ${message ?? ''} ${JSON.stringify(object, (key, value: unknown) => (value instanceof Error ? value.message : value)).slice(0, 300)}`,
      );
  };
  return { lines, info: () => undefined, warn: keep('warn'), error: keep('error') };
}

/** A worker (not started) delivering to `relayUrl`, its transport, and what it logged. */
export function createBenchWorker(options: {
  store: Store;
  config: Config;
  relayUrl: string;
  onChange: (ids: number[]) => void;
  returnPath?: ((mailId: number, recipient: number) => string) | undefined;
}) {
  const { store, config } = options;
  const log = collectingLogger();
  const transport = createRelayTransport(options.relayUrl, { maxConnections: relayPoolSize(config.workerConcurrency) });
  const router = createRelayRouter({
    directory: routingDirectoryFor(store),
    defaultTransport: transport,
    createTransport: (relay) => createRelayTransport(relay.url, { maxConnections: relay.maxConnections }),
    logger: log,
  });
  const worker = createDeliveryWorker({
    store,
    clock: systemClock,
    transport,
    router,
    retryPolicy: retryPolicyFromSettings(config),
    concurrency: config.workerConcurrency,
    leaseMs: config.leaseSeconds * 1000,
    logger: log,
    onChange: options.onChange,
    ...(options.returnPath ? { returnPath: options.returnPath } : {}),
  });
  return { worker, transport, log };
}
