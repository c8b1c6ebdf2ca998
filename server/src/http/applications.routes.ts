/**
 * Applications (API keys) managed by operators (docs/api.md#managing-applications-apiv1applications): list, create, rename, revoke,
 * rotate. A key is in the answer of create and rotate only; an API key calling here gets 403 `operator_only`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  Application,
  ApplicationWithKey,
  CreateApplicationBody,
  DataOf,
  ErrorBody,
  UpdateApplicationBody,
  RotateApplicationBody,
} from '@outbox/contract';
import type { ApplicationService } from '../applications/application.service.js';
import type { AuthService } from '../auth/auth.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };
const ApplicationParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The application id' }),
});

export const applicationsRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; applications: ApplicationService }> = async (
  app,
  { auth, applications },
) => {
  // onRequest, before the body is read and the query checked: a stranger learns nothing and holds no socket.
  app.addHook('onRequest', requireOperator(auth));
  const actorOf = (operator: { username: string } | null) => `operator:${operator?.username ?? 'unknown'}`;
  const tags = ['applications'];

  app.get(
    '/api/v1/applications',
    {
      schema: {
        tags,
        summary: 'Every application (API key), revoked ones included, with its last use and its mails of the last 24 hours',
        response: { 200: DataOf(Application), ...errors },
      },
    },
    async () => ({ data: await applications.listApplications() }),
  );

  app.post(
    '/api/v1/applications',
    {
      schema: {
        tags,
        summary: 'Create an application; the answer holds its key (obx_…), shown only this once',
        body: CreateApplicationBody,
        response: { 201: DataOf(ApplicationWithKey), ...errors },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send({ data: [await applications.createApplication(request.body.name, actorOf(request.operator), { lane: request.body.lane })] }),
  );

  app.get(
    '/api/v1/applications/:id',
    { schema: { tags, summary: 'One application', params: ApplicationParams, response: { 200: DataOf(Application), ...errors } } },
    async (request) => ({ data: [await applications.getApplication(request.params.id)] }),
  );

  app.patch(
    '/api/v1/applications/:id',
    {
      schema: {
        tags,
        summary: 'Change an application: its name, its lane, its content retention (its key does not change)',
        params: ApplicationParams,
        body: UpdateApplicationBody,
        response: { 200: DataOf(Application), ...errors },
      },
    },
    async (request) => ({ data: [await applications.updateApplication(request.params.id, request.body, actorOf(request.operator))] }),
  );

  app.post(
    '/api/v1/applications/:id/revoke',
    {
      schema: {
        tags,
        summary: 'Revoke an application: its key is refused at once, on every instance; 409 when revoked already',
        params: ApplicationParams,
        response: { 200: DataOf(Application), ...errors },
      },
    },
    async (request) => ({ data: [await applications.revokeApplication(request.params.id, actorOf(request.operator))] }),
  );

  app.post(
    '/api/v1/applications/:id/rotate',
    {
      schema: {
        tags,
        summary: 'A new key, shown only now; the old one keeps working for graceSeconds (0 to 86400, default 3600)',
        params: ApplicationParams,
        body: RotateApplicationBody,
        response: { 200: DataOf(ApplicationWithKey), ...errors },
      },
      // The body may be left out (the default grace): checked as `{}`, like an empty object.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => ({
      data: [await applications.rotateApplicationKey(request.params.id, request.body.graceSeconds, actorOf(request.operator))],
    }),
  );
};
