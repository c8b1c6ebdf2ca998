import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, InstancesResponse } from '@outbox/contract';
import { Type } from '@sinclair/typebox';
import type { AuthService } from '../auth/auth.service.js';
import type { InstanceService } from '../instances/instance.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

export const instancesRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; instances: InstanceService }> = async (
  app,
  { auth, instances },
) => {
  app.addHook('onRequest', requireOperator(auth));

  app.get(
    '/api/v1/instances',
    {
      schema: {
        tags: ['operations'],
        summary: 'Every Outbox process from its heartbeat: roles, host and pid, version, start, last heartbeat, load, live or stale',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: InstancesResponse, ...errors },
      },
    },
    () => instances.listInstances(),
  );
};
