import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { HealthService } from '../health/health.service.js';
import type { MetricsService } from '../health/metrics.service.js';

export const healthRoutes: FastifyPluginAsyncTypebox<{ health: HealthService; metrics: MetricsService }> = async (
  app,
  { health, metrics },
) => {
  // Like /healthz, open to whoever reaches the port: a Prometheus scraper holds no operator session. It
  // tells queue sizes, never mail contents; keep it on the monitoring network.
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics: mails per status, oldest Queued age, live workers and instances, process figures',
        response: { 200: Type.String() },
      },
    },
    async (_request, reply) => reply.type(metrics.contentType).send(await metrics.render()),
  );

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
