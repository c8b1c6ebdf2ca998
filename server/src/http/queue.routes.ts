import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, QueueHealthResponse } from '@outbox/contract';
import { Type } from '@sinclair/typebox';
import type { AuthService } from '../auth/auth.service.js';
import type { QueueHealthService } from '../health/queue-health.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

export const queueRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; queueHealth: QueueHealthService }> = async (
  app,
  { auth, queueHealth },
) => {
  app.addHook('onRequest', requireOperator(auth));

  app.get(
    '/api/v1/queue/health',
    {
      schema: {
        tags: ['operations'],
        summary: 'Queued and due, oldest Queued age, in flight, delivered and failed lately, whether a worker is running',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: QueueHealthResponse, ...errors },
      },
    },
    async () => ({ data: [await queueHealth.queueHealth()] }),
  );
};
