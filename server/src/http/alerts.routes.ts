import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AlertsResponse, ErrorBody } from '@outbox/contract';
import { Type } from '@sinclair/typebox';
import type { AlertService } from '../alerts/alert.service.js';
import type { AuthService } from '../auth/auth.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

export const alertsRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; alerts: AlertService }> = async (app, { auth, alerts }) => {
  // onRequest, before the body is read and the query checked: a stranger learns nothing and holds no socket.
  app.addHook('onRequest', requireOperator(auth));

  app.get(
    '/api/v1/alerts',
    {
      schema: {
        tags: ['operations'],
        summary: "Every alert rule's state (ok, pending, firing, resolved, inactive), its value and threshold, and the recent transitions",
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: AlertsResponse, ...errors },
      },
    },
    () => alerts.listAlerts(),
  );
};
