/**
 * The security headers of every answer: helmet's (a strict CSP, nosniff, frame and referrer policies), computed
 * once at start-up. @fastify/helmet builds helmet's middleware anew for each request, parsing the CSP directives
 * every time: about 4 % of the server's CPU in a profile of HTTP intake. The configuration never changes while
 * the server runs, so neither do the headers; they are set on the raw response as helmet sets them, so an
 * answer streamed from `reply.raw` or sent by an error handler carries them too.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

/** The headers helmet's middleware sets for `options`, in its order (none of ours depends on the request). */
export function securityHeadersOf(options: Readonly<HelmetOptions>): ReadonlyArray<readonly [string, string]> {
  const headers: Array<[string, string]> = [];
  const recorder = {
    setHeader(name: string, value: string | number) {
      headers.push([name, String(value)]);
    },
    removeHeader() {
      // X-Powered-By: Fastify never sets it.
    },
  };
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (error?: unknown) => {
    if (error) throw error;
  });
  return headers;
}

/** Sets the headers on every answer of `app` (an onRequest hook of the root, so 404s and errors too). */
export function registerSecurityHeaders(app: FastifyInstance, options: Readonly<HelmetOptions>): void {
  const headers = securityHeadersOf(options);
  app.addHook('onRequest', (_request, reply, done) => {
    for (const [name, value] of headers) reply.raw.setHeader(name, value);
    done();
  });
}
