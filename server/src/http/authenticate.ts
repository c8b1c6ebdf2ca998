/**
 * `Authorization: Token {token}` (docs/console.md §7) for operators. An onRequest hook that routes opt into; it puts
 * the operator on the request, or answers 401 so the console returns to its login view. It runs before the body
 * is read: a stranger cannot hold a socket by sending a body one byte at a time.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyPrincipal, AuthService, Operator } from '../auth/auth.service.js';
import { forbidden, unauthorized } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    operator: Operator | null;
    token: string | null;
    /** The application, on the routes an API key may call (`requireOperatorOrApiKey`). */
    apiKey: ApiKeyPrincipal | null;
  }
}

/** The secret after `Token ` (or `Bearer `, which HTTP tools send by habit). */
export function readAuthorizationToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^(?:Token|Bearer)\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * A request refused before its body was read closes its connection after the answer: otherwise Node reads and
 * throws away the rest of the body, for as long as the client cares to trickle it.
 */
export function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply): void {
  const headers = request.headers;
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
  if (hasBody && !request.raw.complete) reply.header('connection', 'close');
}

export function requireOperator(auth: AuthService) {
  return async function authenticateOperator(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = readAuthorizationToken(request);
    if (!token) {
      closeIfBodyUnread(request, reply);
      throw unauthorized('missing_token', 'Send Authorization: Token {token}; log in to get one.');
    }
    const operator = await auth.findOperatorByToken(token);
    if (!operator) {
      closeIfBodyUnread(request, reply);
      // A valid API key is not an unknown token: 403 says what it may not do (401 would mean "log in again").
      if (await auth.findApiKeyPrincipal(token)) throw operatorOnly();
      throw unauthorized('invalid_token', 'The token is unknown, expired or revoked; log in again.');
    }
    request.operator = operator;
    request.token = token;
  };
}

export const operatorOnly = () =>
  forbidden(
    'operator_only',
    'This call is for operators; an API key may submit mail, read its own mails (GET /api/v1/mail/list, /api/v1/mail/{id}, /api/v1/mail/{id}/raw) and its statistics (GET /api/v1/stats).',
  );

/**
 * An operator's token, or else an API key (put on `request.apiKey`): the reads an application may make of its
 * own mails. The session is looked up first, so the console's requests cost what they did.
 */
export function requireOperatorOrApiKey(auth: AuthService) {
  return async function authenticateOperatorOrApiKey(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const token = readAuthorizationToken(request);
    if (!token) throw unauthorized('missing_token', "Send Authorization: Token {token}: an operator's session token or an API key.");
    const operator = await auth.findOperatorByToken(token);
    if (operator) {
      request.operator = operator;
      request.token = token;
      return;
    }
    const application = await auth.findApiKeyPrincipal(token);
    if (!application) throw unauthorized('invalid_token', 'The token is unknown, expired or revoked: log in again, or check the API key.');
    request.apiKey = application;
  };
}
