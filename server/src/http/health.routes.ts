import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { HealthService } from '../health/health.service.js';

export const healthRoutes: FastifyPluginAsyncTypebox<{ health: HealthService }> = async (app, { health }) => {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness and store reachability',
        response: {
          200: Type.Object({ status: Type.Literal('ok'), store: Type.String() }),
          503: Type.Object({ status: Type.Literal('unavailable'), store: Type.String() }),
        },
      },
    },
    async (_request, reply) => {
      if (await health.isStoreReachable()) return { status: 'ok' as const, store: health.engine };
      return reply.status(503).send({ status: 'unavailable' as const, store: health.engine });
    },
  );
};
