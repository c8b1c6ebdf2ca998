import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, LoginRequest, LoginResponse, LogoutResponse } from '@outbox/contract';
import { LoginLimitError, type AuthService } from '../auth/auth.service.js';
import { AppError } from '../errors.js';
import type { LoginFailureReason } from '../health/metrics.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

/** How much of a name that is no operator's goes into the log. */
const LOGGED_UNKNOWN_NAME_LENGTH = 32;

/**
 * The name as logged: an operator's name whole; any other cut to its first 32 characters, since a name
 * nobody has is often a password typed into the wrong field, or a long probe.
 */
function loggedName(username: string, error: AppError): { username: string; usernameLength?: number } {
  const isKnownName = (error as AppError & { isKnownName?: boolean }).isKnownName === true;
  if (isKnownName || username.length <= LOGGED_UNKNOWN_NAME_LENGTH) return { username };
  return { username: username.slice(0, LOGGED_UNKNOWN_NAME_LENGTH), usernameLength: username.length };
}

export interface LoginObserver {
  recordLoginFailure(reason: LoginFailureReason): void;
}

export const authRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; observer: LoginObserver }> = async (app, { auth, observer }) => {
  app.post(
    '/api/v1/login',
    {
      bodyLimit: 16 * 1024,
      schema: {
        tags: ['session'],
        summary: 'Log in; data[0].token goes into Authorization: Token {token}',
        body: LoginRequest,
        response: { 200: LoginResponse, ...errors },
      },
    },
    async (request) => {
      const { username, password } = request.body;
      try {
        return { data: [await auth.login(username, password, request.ip)] };
      } catch (error) {
        // Every failed or refused login leaves a trace: who was tried, from where, why.
        // Never the password.
        if (error instanceof AppError && (error.statusCode === 401 || error instanceof LoginLimitError)) {
          const reason: LoginFailureReason = error instanceof LoginLimitError ? `${error.limit}_limit` : 'invalid_credentials';
          observer.recordLoginFailure(reason);
          request.log.warn(
            { ...loggedName(username, error), address: request.ip, reason },
            error instanceof LoginLimitError ? 'login refused' : 'login failed',
          );
        }
        throw error;
      }
    },
  );

  app.post(
    '/api/v1/logout',
    {
      onRequest: requireOperator(auth),
      schema: { tags: ['session'], summary: 'Revoke the token of this request', response: { 200: LogoutResponse, ...errors } },
    },
    async (request) => {
      await auth.logout(request.token!, request.operator!);
      return { data: [{ loggedOut: true }] };
    },
  );
};
