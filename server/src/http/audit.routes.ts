import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { AuditQuery, AuditResponse, ErrorBody } from '@outbox/contract';
import type { AuditService } from '../audit/audit.service.js';
import type { AuthService } from '../auth/auth.service.js';
import { requireOperator } from './authenticate.js';

const errors = { '4xx': ErrorBody, '5xx': ErrorBody };

export const auditRoutes: FastifyPluginAsyncTypebox<{ auth: AuthService; audit: AuditService }> = async (app, { auth, audit }) => {
  app.addHook('onRequest', requireOperator(auth));

  app.get(
    '/api/v1/audit',
    {
      schema: {
        tags: ['operations'],
        summary:
          'The audit log, newest first: who did what, when, to which mails, with the outcome; format=csv (or Accept: text/csv) exports',
        querystring: AuditQuery,
        response: { 200: AuditResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { format, ...query } = request.query;
      const wantsCsv = format === 'csv' || (format === undefined && /\btext\/csv\b/i.test(request.headers.accept ?? ''));
      if (!wantsCsv) return audit.listAudit(query);
      // Checks the filter now (a 400 before any byte); the pages are read as the client takes them.
      const csv = Readable.from(audit.exportAuditCsv(query));
      // The schema types the JSON answer; the CSV is a stream sent as it is (no JSON serializer).
      const plain = reply as unknown as FastifyReply;
      return plain.type('text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="outbox-audit.csv"').send(csv);
    },
  );
};
