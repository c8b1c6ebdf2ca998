import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { HealthService } from '../health/health.service.js';
import type { MetricsService } from '../health/metrics.service.js';
import { unauthorized } from '../errors.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Compares digests, so neither the token's length nor its first differing byte shows in the timing. */
function hasMetricsToken(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer +(\S+)$/i.exec(authorization ?? '');
  return match !== null && timingSafeEqual(digest(match[1]!), digest(token));
}

export const healthRoutes: FastifyPluginAsyncTypebox<{ health: HealthService; metrics: MetricsService; metricsToken?: string }> = async (
  app,
  { health, metrics, metricsToken },
) => {
  // A Prometheus scraper holds no operator session: /metrics is open to whoever reaches the port unless
  // METRICS_TOKEN asks for a bearer token (what Prometheus' `authorization` setting sends). It tells queue
  // sizes and login failures, never mail contents.
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics: mails per status, oldest Queued age, live workers and instances, process figures',
        response: { 200: Type.String() },
      },
    },
    async (request, reply) => {
      if (metricsToken !== undefined && !hasMetricsToken(request.headers.authorization, metricsToken)) {
        void reply.header('WWW-Authenticate', 'Bearer realm="metrics"');
        throw unauthorized(
          request.headers.authorization === undefined ? 'missing_metrics_token' : 'invalid_metrics_token',
          'GET /metrics needs header Authorization: Bearer <METRICS_TOKEN>.',
        );
      }
      return reply.type(metrics.contentType).send(await metrics.render());
    },
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
