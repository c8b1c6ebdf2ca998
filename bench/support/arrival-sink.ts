/**
 * A discarding SMTP sink in its own process that notes when each mail arrives (MAIL FROM, wall clock with
 * sub-millisecond resolution), keyed by envelope sender. In its own process so that a busy server under test
 * cannot delay the clock that judges it. `arrivals()` asks the child for what it has seen so far.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { listenDiscardingSink } from './discarding-sink.js';

type ToChild = { type: 'arrivals' } | { type: 'stop' };
type FromChild = { type: 'ready'; url: string } | { type: 'arrivals'; arrivals: Array<[string, number]> };

async function runChild(): Promise<void> {
  const arrivals: Array<[string, number]> = [];
  const sink = await listenDiscardingSink((sender, at) => arrivals.push([sender, at]));
  process.on('message', (message: ToChild) => {
    if (message.type === 'arrivals') process.send?.({ type: 'arrivals', arrivals } satisfies FromChild);
    else void sink.close().then(() => process.exit(0));
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ type: 'ready', url: sink.url } satisfies FromChild);
}

export interface ArrivalSink {
  url: string;
  /** Every arrival so far: [envelope sender, epoch ms]. */
  arrivals(): Promise<Array<[string, number]>>;
  stop(): Promise<void>;
}

export function startArrivalSink(): Promise<ArrivalSink> {
  const child = fork(fileURLToPath(import.meta.url), ['--child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (message: FromChild) => {
      if (message.type !== 'ready') return reject(new Error('the arrival sink did not start'));
      resolve({
        url: message.url,
        arrivals: () =>
          new Promise((done) => {
            const onMessage = (reply: FromChild) => {
              if (reply.type !== 'arrivals') return;
              child.off('message', onMessage);
              done(reply.arrivals);
            };
            child.on('message', onMessage);
            child.send({ type: 'arrivals' } satisfies ToChild);
          }),
        stop: () =>
          new Promise<void>((done) => {
            child.once('exit', () => done());
            child.send({ type: 'stop' } satisfies ToChild);
          }),
      });
    });
  });
}

if (process.argv.includes('--child')) void runChild();
