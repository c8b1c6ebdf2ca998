/**
 * `GET /api/v1/events`: live updates as server-sent events (docs/api.md#live-updates-get-apiv1events). Authenticated like every
 * operator call, with the `Authorization: Token` header: the console reads it with fetch streaming, so a token
 * never goes into a URL. The hub (live/live-hub.ts) decides what is sent; this file only opens the stream.
 */
import { PassThrough } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody } from '@outbox/contract';
import { Type } from '@sinclair/typebox';
import type { AuthService } from '../auth/auth.service.js';
import { AppError } from '../errors.js';
import type { LiveHub } from '../live/live-hub.js';
import { TooManyStreamsError } from '../live/live-streams.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

export const eventsRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; live: LiveHub }> = async (app, { auth, live }) => {
  app.addHook('onRequest', requireOperator(auth));

  app.get(
    '/api/v1/events',
    {
      schema: {
        tags: ['live'],
        summary: 'Live updates (server-sent events): mail changes and status counters, coalesced; resumable with Last-Event-ID',
        description:
          'Events: `mail` `{mails:[{id,status,lastUpdate,providerSentDate,receivedDate,isNew}]}` (status null: deleted), ' +
          '`counts` `{counts:{"0":n,…}}`, `resync` `{reason}` (reload what is shown). A comment every 15 s keeps the stream alive. ' +
          'At most one batch per 300 ms. The stream ends when the session ends (logout, expiry, password change).',
        headers: Type.Object({
          'last-event-id': Type.Optional(Type.String({ maxLength: 100, description: 'The id of the last event received' })),
        }),
        querystring: Type.Object({}, { additionalProperties: false }),
        produces: ['text/event-stream'],
        response: { 200: Type.String({ description: 'text/event-stream' }), ...errors },
      },
    },
    async (request, reply) => {
      const tooMany = () =>
        new AppError(503, 'too_many_streams', 'This server has as many live streams open as it serves; try again later.');
      if (!live.hasRoom()) throw tooMany();
      const body = new PassThrough();
      const response = reply.raw;
      /** Since when the socket has refused more bytes; a 'drain' means it took them. */
      let waitingSince: number | undefined;
      response.on('drain', () => (waitingSince = undefined));
      let client: { close(): void };
      try {
        client = await live.connect(request.token!, request.headers['last-event-id'], {
          write(chunk) {
            if (body.destroyed || body.writableEnded) return true;
            body.write(chunk);
            return body.writableLength < live.maxBufferedBytes;
          },
          end() {
            body.end();
          },
          destroy() {
            body.destroy();
            // A reset, not a FIN: the bytes queued for a client that does not read are thrown away with the socket.
            const socket = request.raw.socket;
            if (typeof socket.resetAndDestroy === 'function' && !socket.destroyed) socket.resetAndDestroy();
            else socket.destroy();
          },
          stalledForMs() {
            if (!response.writableNeedDrain) {
              waitingSince = undefined;
              return 0;
            }
            waitingSince ??= Date.now();
            return Date.now() - waitingSince;
          },
        });
      } catch (error) {
        // Another connect took the last place while this one was authenticated.
        if (error instanceof TooManyStreamsError) throw tooMany();
        throw error;
      }
      // The socket closed (the client went away, or the hub dropped it): only now does the hub forget the stream.
      response.once('close', () => client.close());
      if (response.destroyed) client.close();
      return (
        reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-store')
          // Reverse proxies that buffer answers (nginx) pass this one through as it comes.
          .header('x-accel-buffering', 'no')
          // A stream; the 200 schema above only documents it.
          .send(body as unknown as string)
      );
    },
  );
};
