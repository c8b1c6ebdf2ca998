/**
 * Idle latency: with the worker on and nothing else to do, how long from a mail's
 * acceptance to the start of its delivery. One mail at a time over HTTP, each spaced 20–50 ms after the
 * previous one reached the sink; the sink (bench/support/timed-sink.ts, RELAY_URL) notes MAIL FROM.
 *   accepted → delivery start = sink's MAIL FROM time − the mail's receivedDate (server clock at acceptance,
 *   ms resolution, taken before the commit, so it is the longer of the two measures); goal p99 ≤ 100 ms.
 *   Also shown: 202 received by the client → MAIL FROM (negative when delivery began before the answer
 *   reached the client), and the request's own round trip.
 *
 *   npx tsx bench/idle-latency.ts [--engine sqlite|postgres] [--count 200]
 */
import http from 'node:http';
import type { Mail } from '@outbox/contract';
import { loadConfig } from '../server/src/config.js';
import { printSetup, printTable, runMain, sleep, summarize, verdict, writeResult } from './support/common.js';
import { benchMail } from './support/mails.js';
import { engineOption, parseBenchArgs, wholeNumberOption } from './support/options.js';
import { startBenchOutbox } from './support/outbox.js';
import { preciseNow } from './support/discarding-sink.js';
import { startTimedSink } from './support/timed-sink.js';

const GOAL_P99_MS = 100;

const { engine, count } = parseBenchArgs({ engine: engineOption(), count: wholeNumberOption(200) });

function post(agent: http.Agent, url: string, apiKey: string, body: string): Promise<{ status: number; json: { data?: Mail[] } }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { authorization: `Token ${apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: Mail[] } }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function main(): Promise<void> {
  const sink = await startTimedSink();
  const setup = printSetup('Idle latency: accepted → delivery start (MAIL FROM at the relay), worker on, store idle', {
    engine,
    count,
    spacingMs: '20-50 random',
    worker: `on (WORKER_CONCURRENCY ${loadConfig({}).workerConcurrency}, the default)`,
    relay: 'timed smtp-server sink in this process',
    client: 'node:http keep-alive, one request at a time',
  });

  const outbox = await startBenchOutbox({ engine, label: 'idle_latency', env: { WORKER: 'on', RELAY_URL: sink.url } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const acceptedToStart: number[] = [];
  const answeredToStart: number[] = [];
  const roundTrip: number[] = [];
  try {
    const url = `${outbox.baseUrl}/api/v1/mail`;
    const warmUp = 10;
    for (let i = 0; i < count + warmUp; i++) {
      const sender = `idle${i}@shop.example`;
      const sentAt = preciseNow();
      const answer = await post(agent, url, outbox.apiKey, JSON.stringify(benchMail(i, { fromMail: sender })));
      const answeredAt = preciseNow();
      if (answer.status !== 202) throw new Error(`submission answered ${answer.status}: ${JSON.stringify(answer.json)}`);
      const startedAt = await sink.waitForMailFrom(sender, 10_000);
      if (i >= warmUp) {
        acceptedToStart.push(startedAt - Date.parse(answer.json.data![0]!.receivedDate!));
        answeredToStart.push(startedAt - answeredAt);
        roundTrip.push(answeredAt - sentAt);
      }
      await sleep(20 + Math.random() * 30);
    }

    const accepted = summarize(acceptedToStart);
    const answered = summarize(answeredToStart);
    const request = summarize(roundTrip);
    console.log('');
    printTable(
      ['measure (ms)', 'count', 'p50', 'p95', 'p99', 'max', `goal p99 ≤ ${GOAL_P99_MS}`],
      [
        [
          'accepted (receivedDate) → MAIL FROM',
          accepted.count,
          accepted.p50,
          accepted.p95,
          accepted.p99,
          accepted.max,
          verdict(accepted.p99 <= GOAL_P99_MS),
        ],
        ['202 at the client → MAIL FROM', answered.count, answered.p50, answered.p95, answered.p99, answered.max, ''],
        ['POST /api/v1/mail round trip', request.count, request.p50, request.p95, request.p99, request.max, ''],
      ],
    );
    const file = writeResult('idle-latency', setup, {
      goal: { p99Ms: GOAL_P99_MS },
      acceptedToDeliveryStartMs: accepted,
      answeredToDeliveryStartMs: answered,
      requestRoundTripMs: request,
      met: accepted.p99 <= GOAL_P99_MS,
    });
    console.log(`\nresult: ${file}`);
  } finally {
    agent.destroy();
    await outbox.close();
    await sink.close();
  }
}

runMain(main);
