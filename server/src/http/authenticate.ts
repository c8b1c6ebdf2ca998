/**
 * `Authorization: Token {token}` (docs/console.md §7) for operators. A preHandler that routes opt into; it puts the
 * operator on the request, or answers 401 so the console returns to its login view.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthService, Operator } from '../auth/auth.service.js';
import { unauthorized } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    operator: Operator | null;
    token: string | null;
  }
}

/** The secret after `Token ` (or `Bearer `, which HTTP tools send by habit). */
export function readAuthorizationToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^(?:Token|Bearer)\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export function requireOperator(auth: AuthService) {
  return async function authenticateOperator(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const token = readAuthorizationToken(request);
    if (!token) throw unauthorized('missing_token', 'Send Authorization: Token {token}; log in to get one.');
    const operator = await auth.findOperatorByToken(token);
    if (!operator) throw unauthorized('invalid_token', 'The token is unknown, expired or revoked; log in again.');
    request.operator = operator;
    request.token = token;
  };
}
