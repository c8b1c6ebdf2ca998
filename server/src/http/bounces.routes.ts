import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { BounceIdParams, BounceResponse, BouncesQuery, BouncesResponse, ErrorBody } from '@outbox/contract';
import type { AuthService } from '../auth/auth.service.js';
import type { BounceService } from '../bounces/bounce.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

/** The reports the bounce listener kept, matched or not (docs/bounces.md); operators only. */
export const bouncesRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; bounces: BounceService }> = async (app, { auth, bounces }) => {
  // onRequest, before the body is read and the query checked: a stranger learns nothing and holds no socket.
  app.addHook('onRequest', requireOperator(auth));

  app.get(
    '/api/v1/bounces',
    {
      schema: {
        tags: ['bounces'],
        summary: 'Bounce and complaint reports, newest first; matched=false lists the ones no mail was found for',
        querystring: BouncesQuery,
        response: { 200: BouncesResponse, ...errors },
      },
    },
    (request) => bounces.listReports(request.query),
  );

  app.get(
    '/api/v1/bounces/:id',
    {
      schema: {
        tags: ['bounces'],
        summary: 'One report: what was read in it, its mail and what it changed',
        params: BounceIdParams,
        response: { 200: BounceResponse, ...errors },
      },
    },
    async (request) => ({ data: [await bounces.getReport(request.params.id)] }),
  );

  app.get(
    '/api/v1/bounces/:id/raw',
    {
      schema: {
        tags: ['bounces'],
        summary: 'The report as received (.eml)',
        params: BounceIdParams,
        response: { 200: { type: 'string', description: 'message/rfc822' }, ...errors },
      },
    },
    async (request, reply) => {
      const raw = await bounces.getRaw(request.params.id);
      return reply.type('message/rfc822').header('content-disposition', `attachment; filename="bounce-${request.params.id}.eml"`).send(raw);
    },
  );
};
