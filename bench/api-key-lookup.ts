/**
 * What authenticating an API key costs now that it is asked of the store on every request
 * (docs/decisions.md#api-keys-looked-up-on-every-request): `auth.findApiKeyPrincipal` on the real store, one at a
 * time and 32 at once (as 32 connections submit), beside a full one-mail submission through `inject` for
 * scale. Prints µs of wall time and of this process's CPU per lookup and per submission.
 *
 *   npx tsx bench/api-key-lookup.ts [--engine sqlite|postgres] [--lookups 5000]
 */
import { loadavg } from 'node:os';
import { benchMail } from './support/mails.js';
import { engineOption, parseBenchArgs, wholeNumberOption } from './support/options.js';
import { startBenchOutbox } from './support/outbox.js';

const { engine, lookups } = parseBenchArgs({ engine: engineOption(), lookups: wholeNumberOption(5000) });

const outbox = await startBenchOutbox({ engine, label: 'key_lookup', env: { WORKER: 'off' } });
try {
  const auth = outbox.running.services.auth;
  const cpu = () => {
    const usage = process.cpuUsage();
    return usage.user + usage.system;
  };
  async function measure(label: string, count: number, parallel: number, work: (i: number) => Promise<unknown>) {
    const startedCpu = cpu();
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next < count) await work(next++);
      }),
    );
    const wallMs = performance.now() - started;
    const cpuMicros = cpu() - startedCpu;
    console.log(
      `${label.padEnd(34)} ${count} × ${parallel} at once: ${((wallMs * 1000) / count).toFixed(1)} µs wall, ${(cpuMicros / count).toFixed(1)} µs CPU each`,
    );
  }
  // Warm up the statements and the pool.
  await measure('warm-up', 500, 8, () => auth.findApiKeyPrincipal(outbox.apiKey));
  await measure('lookup, one at a time', lookups, 1, () => auth.findApiKeyPrincipal(outbox.apiKey));
  await measure('lookup, 32 at once', lookups, 32, () => auth.findApiKeyPrincipal(outbox.apiKey));
  await measure('unknown key, 32 at once', lookups, 32, () => auth.findApiKeyPrincipal('obx_not-a-key'));
  const submissions = Math.min(2000, lookups);
  await measure('one-mail submission, 32 at once', submissions, 32, (i) =>
    outbox.running.app.inject({
      method: 'POST',
      url: '/api/v1/mail',
      headers: { authorization: `Token ${outbox.apiKey}` },
      payload: benchMail(i),
    }),
  );
  console.log(`engine ${engine}, load ${loadavg()[0]!.toFixed(1)}`);
} finally {
  await outbox.close();
}
