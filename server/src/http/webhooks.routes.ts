/**
 * Webhook endpoints, their delivery log, test events and replay (docs/api.md#webhooks), for operators only.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  CreateWebhookBody,
  DataOf,
  ErrorBody,
  IdParams,
  MailWebhookDeliveriesQuery,
  ReplayWebhookBody,
  ReplayWebhookResult,
  UpdateWebhookBody,
  WebhookDeliveriesQuery,
  WebhookDeliveriesResponse,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookTestResult,
} from '@outbox/contract';
import type { AuthService } from '../auth/auth.service.js';
import type { WebhookService } from '../webhooks/webhook.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };
const EndpointParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The webhook endpoint id' }),
});

export const webhookRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; webhooks: WebhookService }> = async (
  app,
  { auth, webhooks },
) => {
  // onRequest, before the body is read and the query checked: a stranger learns nothing and holds no socket.
  app.addHook('onRequest', requireOperator(auth));
  const actorOf = (operator: { username: string } | null) => `operator:${operator?.username ?? 'unknown'}`;
  const tags = ['webhooks'];

  app.get(
    '/api/v1/webhooks',
    {
      schema: {
        tags,
        summary: 'Every webhook endpoint with its state and 24-hour success rate',
        response: { 200: DataOf(WebhookEndpoint), ...errors },
      },
    },
    async () => ({ data: await webhooks.listEndpoints() }),
  );

  app.post(
    '/api/v1/webhooks',
    {
      schema: {
        tags,
        summary: 'Create an endpoint; the answer holds its secret (whsec_…), shown only this once',
        body: CreateWebhookBody,
        response: { 201: DataOf(WebhookEndpointWithSecret), ...errors },
      },
    },
    async (request, reply) => {
      const endpoint = await webhooks.createEndpoint(request.body, actorOf(request.operator));
      return reply.code(201).send({ data: [endpoint] });
    },
  );

  app.get(
    '/api/v1/webhooks/:id',
    { schema: { tags, summary: 'One webhook endpoint', params: EndpointParams, response: { 200: DataOf(WebhookEndpoint), ...errors } } },
    async (request) => ({ data: [await webhooks.getEndpoint(request.params.id)] }),
  );

  app.patch(
    '/api/v1/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'Change an endpoint: URL, description, event types, application, enabled',
        params: EndpointParams,
        body: UpdateWebhookBody,
        response: { 200: DataOf(WebhookEndpoint), ...errors },
      },
    },
    async (request) => ({ data: [await webhooks.updateEndpoint(request.params.id, request.body, actorOf(request.operator))] }),
  );

  app.delete(
    '/api/v1/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'Delete an endpoint with its delivery log',
        params: EndpointParams,
        response: { 200: DataOf(WebhookEndpoint), ...errors },
      },
    },
    async (request) => ({ data: [await webhooks.deleteEndpoint(request.params.id, actorOf(request.operator))] }),
  );

  app.post(
    '/api/v1/webhooks/:id/rotate-secret',
    {
      schema: {
        tags,
        summary: 'A new secret, shown only now; the previous one keeps signing beside it for 24 hours',
        params: EndpointParams,
        response: { 200: DataOf(WebhookEndpointWithSecret), ...errors },
      },
    },
    async (request) => ({ data: [await webhooks.rotateSecret(request.params.id, actorOf(request.operator))] }),
  );

  app.post(
    '/api/v1/webhooks/:id/test',
    {
      schema: {
        tags,
        summary: 'Send a webhook.test event to this endpoint alone',
        params: EndpointParams,
        response: { 202: DataOf(WebhookTestResult), ...errors },
      },
    },
    async (request, reply) => reply.code(202).send({ data: [await webhooks.sendTestEvent(request.params.id, actorOf(request.operator))] }),
  );

  app.get(
    '/api/v1/webhooks/:id/deliveries',
    {
      schema: {
        tags,
        summary: "The endpoint's deliveries, newest first, each with every attempt",
        params: EndpointParams,
        querystring: WebhookDeliveriesQuery,
        response: { 200: WebhookDeliveriesResponse, ...errors },
      },
    },
    async (request) => webhooks.listDeliveries(request.params.id, request.query),
  );

  app.post(
    '/api/v1/webhooks/:id/replay',
    {
      schema: {
        tags,
        summary: 'Deliver one event again ({eventId}), or every delivery that failed since an instant ({failedSince})',
        params: EndpointParams,
        body: ReplayWebhookBody,
        response: { 202: DataOf(ReplayWebhookResult), ...errors },
      },
    },
    async (request, reply) =>
      reply.code(202).send({ data: [await webhooks.replay(request.params.id, request.body, actorOf(request.operator))] }),
  );

  app.get(
    '/api/v1/mail/:id/webhook-deliveries',
    {
      schema: {
        tags,
        summary: "One page of the webhook deliveries of one mail's events, oldest first, each with every attempt",
        params: IdParams,
        querystring: MailWebhookDeliveriesQuery,
        response: { 200: WebhookDeliveriesResponse, ...errors },
      },
    },
    async (request) => webhooks.listMailDeliveries(request.params.id, request.query),
  );
};
