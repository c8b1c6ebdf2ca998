import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, LoginRequest, LoginResponse, LogoutResponse } from '@outbox/contract';
import type { AuthService } from '../auth/auth.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

export const authRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService }> = async (app, { auth }) => {
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
    async (request) => ({ data: [await auth.login(request.body.username, request.body.password, request.ip)] }),
  );

  app.post(
    '/api/v1/logout',
    {
      preHandler: requireOperator(auth),
      schema: { tags: ['session'], summary: 'Revoke the token of this request', response: { 200: LogoutResponse, ...errors } },
    },
    async (request) => {
      await auth.logout(request.token!, request.operator!);
      return { data: [{ loggedOut: true }] };
    },
  );
};
