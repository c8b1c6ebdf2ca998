import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import {
  AddSuppressionRequest,
  ErrorBody,
  Suppression,
  SuppressionAddress,
  SuppressionImportResponse,
  SuppressionListResponse,
  SuppressionQuery,
} from '@outbox/contract';
import { Type } from '@sinclair/typebox';
import type { AuthService } from '../auth/auth.service.js';
import { badRequest } from '../errors.js';
import type { SuppressionService } from '../suppression/suppression.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };
/** An import's body: ~100,000 lines of address, note and expiry. */
const IMPORT_BODY_LIMIT = 16 * 1024 * 1024;

export const suppressionsRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; suppressions: SuppressionService }> = async (
  app,
  { auth, suppressions },
) => {
  app.addHook('onRequest', requireOperator(auth));
  // Only inside this plugin: no other route takes CSV.
  app.addContentTypeParser('text/csv', { parseAs: 'string', bodyLimit: IMPORT_BODY_LIMIT }, (_request, body, done) => done(null, body));

  const actorOf = (request: { operator: { username: string } | null }) => `operator:${request.operator!.username}`;

  app.get(
    '/api/v1/suppressions',
    {
      schema: {
        tags: ['suppressions'],
        summary: 'The suppression list, newest first; q searches addresses; format=csv (or Accept: text/csv) exports every match',
        querystring: SuppressionQuery,
        response: { 200: SuppressionListResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { format, ...query } = request.query;
      const wantsCsv = format === 'csv' || (format === undefined && /\btext\/csv\b/i.test(request.headers.accept ?? ''));
      if (!wantsCsv) return suppressions.listSuppressions(query);
      const csv = Readable.from(suppressions.exportCsv(query));
      const plain = reply as unknown as FastifyReply;
      return plain
        .type('text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="outbox-suppressions.csv"')
        .send(csv);
    },
  );

  app.post(
    '/api/v1/suppressions',
    {
      schema: {
        tags: ['suppressions'],
        summary: 'Adds an address by hand (reason manual), with an optional note and expiry; an address already listed is refreshed',
        body: AddSuppressionRequest,
        response: { 200: Suppression, 201: Suppression, ...errors },
      },
    },
    async (request, reply) => {
      const { suppression, created } = await suppressions.addSuppression(request.body, actorOf(request));
      return reply.code(created ? 201 : 200).send(suppression);
    },
  );

  app.delete(
    '/api/v1/suppressions/:address',
    {
      schema: {
        tags: ['suppressions'],
        summary: 'Removes an address (URL-encoded) from the list: mail to it is sent again',
        params: SuppressionAddress,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await suppressions.removeSuppression(request.params.address, actorOf(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v1/suppressions/import',
    {
      bodyLimit: IMPORT_BODY_LIMIT,
      schema: {
        tags: ['suppressions'],
        summary: 'Imports text/csv lines address,note,expiresAt (a header line may name and reorder them): counts added, updated, refused',
        response: { 200: SuppressionImportResponse, ...errors },
      },
    },
    async (request) => {
      if (typeof request.body !== 'string')
        throw badRequest('invalid_content_type', 'body must be text/csv: lines of address,note,expiresAt.');
      return suppressions.importCsv(request.body, actorOf(request));
    },
  );
};
