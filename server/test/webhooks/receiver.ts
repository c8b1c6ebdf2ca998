/**
 * A webhook receiver as an application would run one: a real HTTP server on loopback that records every
 * request (headers, the raw body, when it came) and answers as the test tells it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedRequest {
  at: number;
  /** The request's path and query, e.g. `/hooks?other` (several endpoints may share one receiver). */
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Answer only after this long (a slow receiver). */
  delayMs?: number;
}

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** How the next requests are answered (default 200 "ok"). */
  answer: (request: ReceivedRequest, index: number) => Answer;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hooks'): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const receiver: Receiver = {
    url: '',
    port: 0,
    requests,
    answer: () => ({ status: 200, body: 'ok' }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
      const received = { at: Date.now(), path: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8') };
      const index = requests.length;
      requests.push(received);
      const answer = receiver.answer(received, index);
      const respond = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(respond, answer.delayMs);
      else respond();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}${path}`;
  const close = receiver.close;
  receiver.close = () => {
    server.closeAllConnections();
    return close();
  };
  return receiver;
}

/** Verifies a received request as a receiver would, with the `standardwebhooks` package; throws when it does not. */
export function verify(secret: string, request: ReceivedRequest): unknown {
  return new Webhook(secret).verify(request.body, request.headers);
}
