/**
 * Named relays and routes (docs/relays.md, docs/api.md#relays-and-routes): operators only. A relay's login is
 * write-only: accepted by POST and PATCH, never answered (`hasCredentials` says whether one is set).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CreateRelayBody, DataOf, ErrorBody, PutRoutesBody, Relay, RelayHealth, Route, UpdateRelayBody } from '@outbox/contract';
import type { AuthService } from '../auth/auth.service.js';
import type { RelayHealthService } from '../relays/relay-health.service.js';
import type { RelayService } from '../relays/relay.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };
const RelayParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The relay id' }),
});

export const relaysRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; relays: RelayService; health: RelayHealthService }> = async (
  app,
  { auth, relays, health },
) => {
  app.addHook('onRequest', requireOperator(auth));
  const actorOf = (operator: { username: string } | null) => `operator:${operator?.username ?? 'unknown'}`;
  const tags = ['relays'];

  app.get(
    '/api/v1/relays',
    { schema: { tags, summary: 'Every named relay, by name; never with its login', response: { 200: DataOf(Relay), ...errors } } },
    async () => ({ data: await relays.listRelays() }),
  );

  app.get(
    '/api/v1/relays/health',
    {
      schema: {
        tags,
        summary:
          'Each relay as the live workers see it (the default relay first, then every named relay): up, throttled, down or idle, since when, rate, messages today, quota used, last error, latency',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: DataOf(RelayHealth), ...errors },
      },
    },
    async () => ({ data: await health.listRelayHealth() }),
  );

  app.post(
    '/api/v1/relays',
    {
      schema: {
        tags,
        summary: 'Add a relay; its login (credentials, or user:pass in the URL) is kept apart and never shown again',
        body: CreateRelayBody,
        response: { 201: DataOf(Relay), ...errors },
      },
    },
    async (request, reply) => reply.code(201).send({ data: [await relays.createRelay(request.body, actorOf(request.operator))] }),
  );

  app.get(
    '/api/v1/relays/:id',
    { schema: { tags, summary: 'One relay', params: RelayParams, response: { 200: DataOf(Relay), ...errors } } },
    async (request) => ({ data: [await relays.getRelay(request.params.id)] }),
  );

  app.patch(
    '/api/v1/relays/:id',
    {
      schema: {
        tags,
        summary: 'Change a relay: any of its name, URL, TLS policy, login (null removes it) and limits',
        params: RelayParams,
        body: UpdateRelayBody,
        response: { 200: DataOf(Relay), ...errors },
      },
    },
    async (request) => ({ data: [await relays.updateRelay(request.params.id, request.body, actorOf(request.operator))] }),
  );

  app.delete(
    '/api/v1/relays/:id',
    {
      schema: {
        tags,
        summary: 'Remove a relay; 409 while a route names it',
        params: RelayParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await relays.deleteRelay(request.params.id, actorOf(request.operator));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/v1/routes',
    {
      schema: {
        tags,
        summary: 'The routes in order: the first that matches a mail picks its relays',
        response: { 200: DataOf(Route), ...errors },
      },
    },
    async () => ({ data: await relays.listRoutes() }),
  );

  app.put(
    '/api/v1/routes',
    {
      schema: {
        tags,
        summary: 'Replace every route at once, in order; a mail no route matches goes to the default relay (RELAY_URL)',
        body: PutRoutesBody,
        response: { 200: DataOf(Route), ...errors },
      },
    },
    async (request) => ({ data: await relays.replaceRoutes(request.body.routes, actorOf(request.operator)) }),
  );
};
