/**
 * A closed-loop HTTP load generator on Node's own http module (keep-alive agent, no dependency), run in a
 * child process so it does not take the event loop of the server under test. `connections` clients each
 * send a request, wait for the full answer, and send the next, until the duration or the request count is
 * reached. Every answer's status is counted; latencies are kept per request.
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { benchMail } from './mails.js';

export interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  /** What each request's body is: one mail, or a batch of `batchSize` mails. */
  body: { kind: 'single' } | { kind: 'batch'; batchSize: number };
  connections: number;
  durationMs: number;
  maxRequests?: number;
  /** Mails are numbered from here so runs do not repeat each other's mails. */
  firstIndex: number;
}

export interface LoadResult {
  requests: number;
  mails: number;
  elapsedMs: number;
  /** Answers by HTTP status; `error` for a failed request (connection reset, timeout). */
  statuses: Record<string, number>;
  latenciesMs: number[];
  firstError?: string;
}

async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const target = new URL(spec.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections });
  const perRequest = spec.body.kind === 'batch' ? spec.body.batchSize : 1;
  const result: LoadResult = { requests: 0, mails: 0, elapsedMs: 0, statuses: {}, latenciesMs: [] };
  let nextIndex = spec.firstIndex;
  let issued = 0;

  const makeBody = (): string => {
    const start = nextIndex;
    nextIndex += perRequest;
    return spec.body.kind === 'batch'
      ? JSON.stringify(Array.from({ length: perRequest }, (_, i) => benchMail(start + i)))
      : JSON.stringify(benchMail(start));
  };

  const send = (body: string) =>
    new Promise<number>((resolve, reject) => {
      const request = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname + target.search,
          method: 'POST',
          headers: { ...spec.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            if (status !== 202 && result.firstError === undefined)
              result.firstError = `${status} ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`;
            resolve(status);
          });
          response.on('error', reject);
        },
      );
      request.setTimeout(30_000, () => request.destroy(new Error('request timed out after 30 s')));
      request.on('error', reject);
      request.end(body);
    });

  const started = performance.now();
  const deadline = started + spec.durationMs;
  await Promise.all(
    Array.from({ length: spec.connections }, async () => {
      while (performance.now() < deadline && (spec.maxRequests === undefined || issued < spec.maxRequests)) {
        issued += 1;
        // The body is built before the clock starts for this request: the client's own work is not latency.
        const body = makeBody();
        const sent = performance.now();
        let key: string;
        try {
          key = String(await send(body));
        } catch (error) {
          key = 'error';
          if (result.firstError === undefined) result.firstError = error instanceof Error ? error.message : String(error);
        }
        result.latenciesMs.push(performance.now() - sent);
        result.requests += 1;
        if (key === '202') result.mails += perRequest;
        result.statuses[key] = (result.statuses[key] ?? 0) + 1;
      }
    }),
  );
  result.elapsedMs = performance.now() - started;
  agent.destroy();
  return result;
}

/** Runs one load in a child process and resolves with its result. */
export function runLoadInChild(spec: LoadSpec): Promise<LoadResult> {
  const child = fork(fileURLToPath(import.meta.url), ['--child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    let settled = false;
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!settled) reject(new Error(`the load generator exited without a result (${code})`));
    });
    child.once('message', (message: { result?: LoadResult; error?: string }) => {
      settled = true;
      child.disconnect();
      if (message.result) resolve(message.result);
      else reject(new Error(message.error ?? 'load generator failed'));
    });
    child.send(spec);
  });
}

if (process.argv.includes('--child') && process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.once('message', (spec: LoadSpec) => {
    runLoad(spec).then(
      (result) => process.send?.({ result }),
      (error: unknown) => process.send?.({ error: error instanceof Error ? error.stack : String(error) }),
    );
  });
}
