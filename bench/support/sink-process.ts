/**
 * A discarding SMTP sink in its own process: the embedded capture relay with `store: false`, forked by
 * the delivery benchmark so the sink's CPU is not taken from the process under test (a real provider is
 * another machine). It sends `{ port, url }` to the parent once listening and exits on `{ type: 'stop' }` or
 * when the parent goes away.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startCaptureRelay } from '../../server/src/delivery/capture-relay.js';
import { makeTempDir, removeDir } from './common.js';

interface SinkMessage {
  type: 'stop';
}

async function runChild(): Promise<void> {
  const dataDir = makeTempDir('outbox-bench-sink-');
  const relay = await startCaptureRelay({
    dataDir,
    store: false,
    logger: { info: () => undefined, warn: () => undefined, error: (obj) => console.error('sink error', obj) },
  });
  process.on('message', (message: SinkMessage) => {
    if (message.type === 'stop') {
      void relay.close().then(() => {
        removeDir(dataDir);
        process.exit(0);
      });
    }
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ type: 'ready', port: relay.port, url: relay.url });
}

export interface SinkProcess {
  url: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/** Forks this file as a sink and resolves once it listens. */
export function startSinkProcess(): Promise<SinkProcess> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the sink process exited early (${code})`)));
    child.once('message', (message: { type: string; port: number; url: string }) => {
      child.removeAllListeners('exit');
      resolve({
        url: message.url,
        port: message.port,
        pid: child.pid!,
        stop: () =>
          new Promise<void>((done) => {
            child.once('exit', () => done());
            child.send({ type: 'stop' });
          }),
      });
    });
  });
}

if (process.argv.includes('--child') && process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  runChild().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
