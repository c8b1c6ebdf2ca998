import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  BouncesResponse,
  DeleteMailResponse,
  ErrorBody,
  IdParams,
  MailDetailResponse,
  MailEventsResponse,
  MailListQuery,
  MailPageQuery,
  MailListResponse,
  MailResponse,
  RemoteImageQuery,
} from '@outbox/contract';
import type { AuthService } from '../auth/auth.service.js';
import type { ApplicationReads } from '../mail/application-reads.js';
import type { BounceService } from '../bounces/bounce.service.js';
import type { MailService } from '../mail/mail.service.js';
import type { RemoteImageService } from '../remote-images/remote-image.service.js';
import { requireOperator, requireOperatorOrApiKey } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

/** What an API key may read of its own mails (docs/api.md#applications-reading-your-own-mails); every other mail call is for operators. */
const APPLICATION_READS = new Set([
  '/api/v1/mail/list',
  '/api/v1/mail/:id',
  '/api/v1/mail/:id/raw',
  '/api/v1/mail/:id/events',
  '/api/v1/mail/:id/bounces',
]);

export const mailRoutes: FastifyPluginAsyncTypebox<{
  auth: AuthService;
  mails: MailService;
  applications: ApplicationReads;
  bounces?: BounceService;
  remoteImages: RemoteImageService;
}> = async (app, { auth, mails, applications, bounces, remoteImages }) => {
  const operatorOnly = requireOperator(auth);
  const operatorOrApplication = requireOperatorOrApiKey(auth);
  // onRequest, before the body is read; the route is known by then.
  app.addHook('onRequest', (request, reply) =>
    (request.method === 'GET' && APPLICATION_READS.has(request.routeOptions.url ?? '') ? operatorOrApplication : operatorOnly)(
      request,
      reply,
    ),
  );
  const actorOf = (operator: { username: string } | null) => `operator:${operator?.username ?? 'unknown'}`;

  app.get(
    '/api/v1/mail/list',
    {
      schema: {
        tags: ['mail'],
        summary: 'List mails; without limit every matching mail, with limit one keyset page',
        querystring: MailListQuery,
        response: { 200: MailListResponse, ...errors },
      },
    },
    async (request) => {
      const { status, q, receivedFrom, receivedTo, sort, order, limit, cursor, messageId, idempotencyKey, application } = request.query;
      const statuses = status?.split(',').map(Number);
      // An application's own mails, or an operator's exact lookup: the small read by id, not the list planner.
      if (request.apiKey || messageId !== undefined || idempotencyKey !== undefined) {
        const given = { q, receivedFrom, receivedTo, sort, order, application };
        return applications.listMails(request.apiKey?.id ?? null, {
          statuses,
          messageId,
          idempotencyKey,
          limit,
          cursor,
          otherParameters: Object.keys(given).filter((name) => given[name as keyof typeof given] !== undefined),
        });
      }
      return mails.listMails({ statuses, q, receivedFrom, receivedTo, sort, order, limit, cursor, application });
    },
  );

  app.get(
    '/api/v1/mail/:id',
    {
      schema: {
        tags: ['mail'],
        summary: 'Everything about one mail: recipients, headers, bodies, attempts and event log',
        params: IdParams,
        response: { 200: MailDetailResponse, ...errors },
      },
    },
    async (request) => {
      const { eventsNextCursor, ...detail } = await (request.apiKey
        ? applications.getMailDetail(request.apiKey.id, request.params.id)
        : mails.getMailDetail(request.params.id));
      // The first page of the reports that came back for it (docs/bounces.md), read after the detail: a mail
      // deleted between has none. The rest of the events and reports are paged (the two routes below).
      const reports = bounces ? await bounces.listMailReports(request.params.id) : undefined;
      return {
        data: [reports ? { ...detail, bounces: reports.data } : detail],
        meta: { eventsNextCursor, bouncesNextCursor: reports?.meta.nextCursor ?? null },
      };
    },
  );

  app.get(
    '/api/v1/mail/:id/events',
    {
      schema: {
        tags: ['mail'],
        summary: "One page of a mail's event log, oldest first (limit, cursor)",
        params: IdParams,
        querystring: MailPageQuery,
        response: { 200: MailEventsResponse, ...errors },
      },
    },
    async (request) =>
      request.apiKey
        ? applications.listMailEvents(request.apiKey.id, request.params.id, request.query)
        : mails.listMailEvents(request.params.id, request.query),
  );

  app.get(
    '/api/v1/mail/:id/bounces',
    {
      schema: {
        tags: ['mail'],
        summary: 'One page of the bounce and complaint reports matched to a mail, oldest first (limit, cursor)',
        params: IdParams,
        querystring: MailPageQuery,
        response: { 200: BouncesResponse, ...errors },
      },
    },
    async (request) => {
      if (request.apiKey) await applications.ensureOwn(request.apiKey.id, request.params.id);
      else await mails.ensureExists(request.params.id);
      if (!bounces) return { data: [], meta: { nextCursor: null } };
      return bounces.listMailReports(request.params.id, { limit: request.query.limit ?? 100, cursor: request.query.cursor });
    },
  );

  app.get(
    '/api/v1/mail/:id/raw',
    {
      schema: {
        tags: ['mail'],
        summary:
          'The stored message (.eml), byte for byte as it goes to the provider; 410 content_removed once content retention removed it',
        params: IdParams,
        response: { 200: { type: 'string', description: 'message/rfc822' }, ...errors },
      },
    },
    async (request, reply) => {
      const raw = await (request.apiKey
        ? applications.getRawMessage(request.apiKey.id, request.params.id)
        : mails.getRawMessage(request.params.id));
      return reply.type('message/rfc822').header('content-disposition', `attachment; filename="mail-${request.params.id}.eml"`).send(raw);
    },
  );

  app.get(
    '/api/v1/mail/:id/remote-image',
    {
      schema: {
        tags: ['mail'],
        summary: "One remote image of the mail's HTML body, fetched by the server (operators only; docs/api.md)",
        params: IdParams,
        querystring: RemoteImageQuery,
        response: { 200: { type: 'string', description: 'image/png, image/jpeg, image/gif, image/webp, image/avif, …' }, ...errors },
      },
    },
    async (request, reply) => {
      const image = await remoteImages.getRemoteImage(request.params.id, request.query.url);
      return (
        reply
          .type(image.contentType)
          // Should the answer ever be opened as a document, it is one with no script, no origin and no fetches.
          .header('content-security-policy', "default-src 'none'; sandbox")
          .header('x-content-type-options', 'nosniff')
          .header('content-disposition', 'inline')
          // The operator's own browser may keep it a while (reopening a mail); no shared cache may.
          .header('cache-control', 'private, max-age=600')
          .send(image.body)
      );
    },
  );

  app.delete(
    '/api/v1/mail/:id',
    {
      schema: {
        tags: ['mail'],
        summary: 'Delete a Dequeued, ProviderSent, ProviderError or Error mail (409 when Queued or Processing)',
        params: IdParams,
        response: { 200: DeleteMailResponse, ...errors },
      },
    },
    async (request) => ({ data: [await mails.deleteMail(request.params.id, actorOf(request.operator))] }),
  );

  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/api/v1/mail/:id/dequeue',
      schema: {
        tags: ['mail'],
        summary: 'Take a Queued mail out of the queue (409 unless Queued)',
        params: IdParams,
        response: { 200: MailResponse, ...errors },
      },
      handler: async (request) => ({ data: [await mails.dequeueMail(request.params.id, actorOf(request.operator))] }),
    });
  }

  app.post(
    '/api/v1/mail/:id/requeue',
    {
      schema: {
        tags: ['mail'],
        summary: 'Put a Dequeued, ProviderError or Error mail back in the queue, due now (409 content_removed once its content is gone)',
        params: IdParams,
        response: { 200: MailResponse, ...errors },
      },
    },
    async (request) => ({ data: [await mails.requeueMail(request.params.id, actorOf(request.operator))] }),
  );
};
