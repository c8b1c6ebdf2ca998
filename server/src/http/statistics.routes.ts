import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  ApplicationStatisticsQuery,
  ApplicationStatisticsResponse,
  ErrorBody,
  StatisticsQuery,
  StatisticsResponse,
} from '@outbox/contract';
import type { AuthService } from '../auth/auth.service.js';
import type { StatisticsService } from '../statistics/statistics.service.js';
import { operatorOnly, requireOperatorOrApiKey } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

/** Hourly statistics per application (docs/api.md#statistics-get-apiv1stats): operators read all, an API key its own. */
export const statisticsRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; statistics: StatisticsService }> = async (
  app,
  { auth, statistics },
) => {
  // onRequest, before the query is checked: a stranger learns nothing.
  app.addHook('onRequest', requireOperatorOrApiKey(auth));

  app.get(
    '/api/v1/stats',
    {
      schema: {
        tags: ['statistics'],
        summary: 'Counters per hour or day (accepted, sent, deferred, failed, bounced, complained, suppressed, dequeued), latency, rates',
        querystring: StatisticsQuery,
        response: { 200: StatisticsResponse, ...errors },
      },
    },
    async (request) => ({
      data: [
        await statistics.readStatistics(
          request.query,
          request.apiKey ? { kind: 'application', apiKeyId: request.apiKey.id } : { kind: 'operator' },
        ),
      ],
    }),
  );

  app.get(
    '/api/v1/stats/applications',
    {
      schema: {
        tags: ['statistics'],
        summary: "Each application's totals over a range (operators): counters, latency and rates, one item per application",
        querystring: ApplicationStatisticsQuery,
        response: { 200: ApplicationStatisticsResponse, ...errors },
      },
    },
    async (request) => {
      // Every application's figures: an API key reads its own through GET /api/v1/stats.
      if (!request.operator) throw operatorOnly();
      return statistics.readApplicationStatistics(request.query);
    },
  );
};
