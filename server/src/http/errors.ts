/**
 * Turns every failure into the error body of docs/api.md#answers-and-errors: `{ error: { code, message } }`, with a message
 * that names the bad field for input errors, and nothing internal for 5xx (those are logged instead).
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { AppError, RateLimitError } from '../errors.js';
import { isStoreFullError, isStoreUnavailableError } from '../store-errors.js';

interface ValidationIssue {
  instancePath: string;
  keyword: string;
  message?: string | undefined;
  params: Record<string, unknown>;
}

const partNames: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** `body.to[0].recipientMail must match format "email"` rather than ajv's `/to/0/recipientMail ...`. */
export function describeValidationIssue(context: string | undefined, issue: ValidationIssue): string {
  const part = partNames[context ?? ''] ?? context ?? 'request';
  const path = issue.instancePath
    .split('/')
    .filter(Boolean)
    .map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`))
    .join('');
  const field = `${part}${path}`;
  switch (issue.keyword) {
    case 'required':
      return `${field}.${String(issue.params.missingProperty)} is required`;
    case 'additionalProperties':
      return `${field}.${String(issue.params.additionalProperty)} is not an accepted field`;
    case 'type':
      return `${field} must be ${String(issue.params.type)}`;
    case 'enum':
      return `${field} must be one of ${(issue.params.allowedValues as unknown[]).join(', ')}`;
    default:
      return `${field} ${issue.message ?? 'is invalid'}`;
  }
}

function send(reply: FastifyReply, status: number, code: string, message: string) {
  return reply.status(status).type('application/json; charset=utf-8').send({ error: { code, message } });
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) {
      if (error instanceof RateLimitError) reply.header('retry-after', String(error.retryAfterSeconds));
      return send(reply, error.statusCode, error.code, error.message);
    }
    const fastifyError = error as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
    if (fastifyError.validation && fastifyError.validation.length > 0) {
      const message = fastifyError.validation.map((issue) => describeValidationIssue(fastifyError.validationContext, issue)).join('; ');
      return send(reply, 400, 'invalid_request', `${message}.`);
    }
    const status = fastifyError.statusCode ?? 500;
    if (status === 413) return send(reply, 413, 'payload_too_large', 'The request body is larger than this endpoint accepts.');
    if (status === 415) return send(reply, 415, 'unsupported_media_type', 'Send the body as application/json.');
    if (status === 429) return send(reply, 429, 'rate_limited', 'Too many requests; slow down and try again shortly.');
    // @fastify/static (send) refuses paths that climb out of the console's folder (`/..%2f..%2fetc/passwd`).
    if (status === 403) return send(reply, 403, 'forbidden_path', 'That path is outside what this server serves.');
    if (status >= 400 && status < 500) {
      const code = fastifyError.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ? 'invalid_json' : 'bad_request';
      return send(reply, status, code, fastifyError.message);
    }
    if (isStoreUnavailableError(error)) {
      request.log.warn({ err: error }, 'store unavailable');
      reply.header('retry-after', '5');
      return send(
        reply,
        503,
        'store_unavailable',
        'The mail store is not reachable right now; nothing was changed. Try again in a few seconds.',
      );
    }
    if (isStoreFullError(error)) {
      request.log.error({ err: error }, 'store full');
      return send(reply, 507, 'store_full', 'The mail store has no space left; nothing was changed. Free disk space, then try again.');
    }
    request.log.error({ err: error }, 'request failed');
    return send(reply, 500, 'internal_error', 'Something went wrong on our side; it has been logged. Try again.');
  });

  app.setNotFoundHandler((request, reply) =>
    send(reply, 404, 'route_not_found', `No endpoint answers ${request.method} ${request.url.split('?')[0]}.`),
  );
}

/**
 * URLs Fastify cannot decode (`/%`) never reach a route or the error handler: Fastify answers them through
 * this option of its constructor, with its own body unless told otherwise.
 */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_BAD_URL') {
    void send(reply, 400, 'bad_url', 'The request URL is not valid: a percent sign must start an escape such as %20.');
    return;
  }
  request.log.warn({ err: error }, 'framework error');
  void send(reply, error.statusCode ?? 400, 'bad_request', 'The request could not be routed.');
}

const clientErrors: Record<string, { status: number; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: 'headers_too_large',
    message: 'The request headers are larger than this server accepts (16 KiB).',
  },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'request_timeout', message: 'The request took too long to arrive.' },
};

/**
 * Requests Node's HTTP parser refuses (oversized headers, malformed request lines) never become a request:
 * Node hands the raw socket to this handler, and the answer is written by hand, in the usual error shape.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const known = clientErrors[error.code ?? ''] ?? { status: 400, code: 'bad_request', message: 'The request is not valid HTTP.' };
  const body = JSON.stringify({ error: { code: known.code, message: known.message } });
  // Bytes after a request that was already answered (pipelined garbage behind `Connection: close`) fail to
  // parse while that answer is on the socket: a second status line would land in the first answer's body.
  // Node's own handler has the same rule: answer only when no response has started on this socket.
  const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && !answering?.headersSent) {
    socket.write(
      `HTTP/1.1 ${known.status} ${http.STATUS_CODES[known.status] ?? 'Error'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

const FORBIDDEN_KEY = 'Object contains forbidden prototype property';

/**
 * JSON bodies, where an empty body is no body: the spec's console sends `Content-Type: application/json` on
 * every call, DELETE and GET included, without a payload. A `__proto__` key or a `constructor.prototype`
 * is refused (secure-json-parse): merged or spread into another object it would change that object's
 * prototype, and no field of the API has either name.
 */
export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, secureJson.parse(text, null, { protoAction: 'error', constructorAction: 'error' }));
    } catch (error) {
      if (error instanceof SyntaxError && error.message === FORBIDDEN_KEY) {
        done(
          new AppError(400, 'forbidden_json_key', 'The request body has a "__proto__" key or a "constructor.prototype"; remove it.'),
          undefined,
        );
      } else done(new AppError(400, 'invalid_json', 'The request body is not valid JSON.'), undefined);
    }
  });
}
