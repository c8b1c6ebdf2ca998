/**
 * One HTTP POST of a webhook, never throwing: every result (an answer, a timeout, a refused connection or
 * address) becomes an `HttpAttempt`. Connections are kept alive per host (the agent's pool), and, unless
 * private targets are allowed, every connection's address is checked as it is made (net/address-guard.ts):
 * the name is resolved by the guarded lookup, and an IP literal, which Node connects to without a lookup, is
 * checked before the request. Redirects are not followed: a 3xx is an answer like any other non-2xx.
 */
import http from 'node:http';
import https from 'node:https';
import { WEBHOOK_RESPONSE_EXCERPT_BYTES } from '@outbox/contract';
import { AddressRefusedError, checkLiteralHost, guardedLookup } from '../net/address-guard.js';

export interface HttpAttempt {
  httpStatus: number | null;
  retryAfter: string | undefined;
  /** The first WEBHOOK_RESPONSE_EXCERPT_BYTES of the answer's body, as UTF-8. */
  response: string;
  error: string | null;
  durationMs: number;
}

/** Read past the excerpt so the connection can be reused, up to this much; a longer answer closes it. */
const MAX_DRAINED_BYTES = 64 * 1024;

export interface WebhookSender {
  send(request: { url: string; headers: Record<string, string>; body: string }): Promise<HttpAttempt>;
  close(): void;
}

export function createWebhookSender(options: { timeoutMs: number; allowPrivate: boolean; maxSocketsPerHost: number }): WebhookSender {
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSocketsPerHost,
    // The agent hands these to net.connect / tls.connect: the check is made on the address connected to.
    ...(options.allowPrivate ? {} : { lookup: guardedLookup }),
  };
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);

  function send({ url, headers, body }: { url: string; headers: Record<string, string>; body: string }): Promise<HttpAttempt> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise<HttpAttempt>((resolve) => {
      let target: URL;
      try {
        target = new URL(url);
        if (!options.allowPrivate) checkLiteralHost(target.hostname);
      } catch (error) {
        resolve({ httpStatus: null, retryAfter: undefined, response: '', error: describeError(error), durationMs: elapsed() });
        return;
      }
      let settled = false;
      const finish = (attempt: Omit<HttpAttempt, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...attempt, durationMs: elapsed() });
      };
      const failed = (error: string) => finish({ httpStatus: null, retryAfter: undefined, response: '', error });
      const isHttps = target.protocol === 'https:';
      const request = (isHttps ? https : http).request(target, {
        method: 'POST',
        agent: isHttps ? httpsAgent : httpAgent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Outbox-Webhooks/1',
          ...headers,
          'content-length': String(Buffer.byteLength(body)),
        },
      });
      const timer = setTimeout(() => {
        failed(`timeout after ${options.timeoutMs} ms`);
        request.destroy();
      }, options.timeoutMs);
      request.on('error', (error) => failed(describeError(error)));
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        let read = 0;
        const done = () => {
          const excerpt = Buffer.concat(chunks).subarray(0, WEBHOOK_RESPONSE_EXCERPT_BYTES).toString('utf8');
          const retryAfter = response.headers['retry-after'];
          finish({
            httpStatus: response.statusCode ?? null,
            retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
            response: excerpt,
            error: null,
          });
        };
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (kept < WEBHOOK_RESPONSE_EXCERPT_BYTES) {
            chunks.push(chunk);
            kept += chunk.length;
          }
          if (read > MAX_DRAINED_BYTES) {
            done();
            response.destroy();
          }
        });
        response.on('end', done);
        // A body cut off after its status arrived: the status is the answer.
        response.on('error', done);
        response.on('aborted', done);
      });
      request.end(body);
    });
  }

  return {
    send,
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

/** A person's reading of a connection failure. */
export function describeError(error: unknown): string {
  if (error instanceof AddressRefusedError) return error.message;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset by the receiver';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host not found (${message})`;
    case 'EADDRREFUSED':
      return message;
    default:
      return message;
  }
}
